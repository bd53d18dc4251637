/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "db.h"
#include "fid.h"

/* One recording in progress: the boot, or one launch of one executable. Files are kept once each, in
 * first-access order, with a hash index so the per-event cost is O(1). */
typedef struct SessionFile {
        FileKey key;
        uint64_t offset_usec;   /* first access relative to the session start */
        char *path;             /* resolved soon after the read, while the kernel can still name it */
} SessionFile;

typedef struct Session Session;
struct Session {
        ProfileKind kind;
        char *profile;          /* "boot" or the executable's absolute path */
        uint64_t start_usec;    /* CLOCK_MONOTONIC */
        uint64_t start_realtime_usec;
        uint64_t deadline_usec; /* CLOCK_MONOTONIC: the window closes here */
        pid_t root_pid;         /* launch: the exec'ing process */
        uid_t uid;              /* launch: its real uid at the exec (UID_INVALID: unknown); boot: 0 */
        char *cgroup;           /* launch: its app-*.scope/.service cgroup on desktops, else NULL */
        bool incomplete;        /* events were lost (queue overflow) or cut short */
        size_t max_files;       /* MaxSessionFiles=: takes no more files than this; 0 = no limit */
        bool full;              /* a file was left out for max_files (the session is incomplete too) */

        SessionFile *files;
        size_t n_files, allocated;
        uint32_t *index;        /* open addressing: file index + 1, 0 = empty */
        size_t n_buckets;
        size_t n_resolved;      /* files[0..n_resolved) had their path resolution attempted */

        Session *next;
};

int session_new(ProfileKind kind, const char *profile, uint64_t now_usec, uint64_t window_usec, Session **ret);
Session *session_free(Session *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Session *, session_free);

/* Returns 1 if the file was new to the session, 0 if already there or left out because the session holds
 * max_files already (which marks it full and incomplete), -ENOMEM. */
int session_add(Session *s, const FileKey *key, uint64_t now_usec);
bool session_contains(const Session *s, const FileKey *key);

/* Approximate heap bytes held, for status and the memory benchmark. */
size_t session_memory(const Session *s);
