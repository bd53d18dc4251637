/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/session.h"

/* The boot session's share for users (BootUserShare=, seekless.conf(5)). The boot session takes the reads
 * of every process, and the boot profile is laid out first and never evicted; but any user can have
 * processes run during the boot (an @reboot cron job, a lingering user service, a desktop session). So the
 * reads of processes whose real uid is a user's (above SYSTEM_UID_MAX, or not known) take at most a share
 * of the session's caps, and come after the system's:
 *   - files: at most the share of MaxSessionFiles=; a user's read of a file beyond is left out, and a system
 *     process reads it as if the user had not (neither an ignore mark nor the inode cache stands in its way);
 *   - pages (page events): users' reads add at most the share of MaxHotSetMiB=;
 *   - filesystem metadata: users' reads make at most the share of the session's metadata ranges;
 *   - when the window closes, users' files hot bytes (their ranges' bytes, or the whole file when it has
 *     none or more of it is cached than the session saw read, as the profile will count it) are counted in
 *     read order, and those beyond the share of MaxHotSetMiB= are left out; then the system's files and
 *     ranges are put first, users' after them, each in read order.
 * A file a system process reads too is the system's. Each decision is O(1) per event: a bit per file. */
typedef struct BootShare {
        bool on;                        /* a share below 100% */
        size_t max_files;               /* users' files at most */
        uint64_t max_pages;             /* users' pages (PAGE_SIZE) at most, and their files' hot bytes */
        size_t max_meta;                /* users' metadata ranges at most */
        uint64_t *user;                 /* a bit per session file: a user's (no system process read it) */
        size_t n_words;
        size_t n_user_files;
        uint64_t user_pages;
        size_t user_meta;
        /* users' reads not taken, for the log: reads (events) of files beyond the share, pages, metadata
         * events; files left out over the share of hot bytes */
        uint64_t left_reads, left_pages, left_meta, left_hot_files;
} BootShare;

/* percent: BootUserShare=, 0-100; the caps it is a share of. */
void boot_share_init(BootShare *b, double percent, size_t max_session_files, uint64_t max_hot_set_bytes);
void boot_share_done(BootShare *b);

bool boot_share_user_file(const BootShare *b, size_t file);
/* Anything of users' left out (the session is then stored as incomplete). */
bool boot_share_left_out(const BootShare *b);

/* A read of key: session_add_where(), unless it is a user's (user) and the file is new and users' files
 * are at their share (then counted, and 0 returned). A system process's read of a user's file makes it the
 * system's. Returns what session_add_where() does, or 0. */
int boot_share_add_file(BootShare *b, Session *s, bool user, const FileKey *key, uint64_t now_usec,
                        const FileKey *dir, const char *name);
/* session_add_pages(), unless a user's and users' pages are at their share (counted, 0 returned). A
 * system process's pages of a user's file make it the system's. */
int boot_share_add_pages(BootShare *b, Session *s, bool user, uint32_t file, uint64_t first, uint64_t n,
                         uint64_t now_usec);
/* session_add_metadata(), unless a user's and users' ranges are at their share (counted, 0 returned). */
int boot_share_add_metadata(BootShare *b, Session *s, bool user, uint64_t fsid, uint64_t first, uint64_t n,
                            uint64_t now_usec);

/* A user's file's hot bytes, given the pages the session saw read of it (0: none, or no page data). */
typedef uint64_t (*BootShareHotBytesFn)(const Session *s, size_t file, uint64_t seen_pages, void *userdata);

/* The window closed (s sealed): users' files over the share of hot bytes left out, then the files and
 * their ranges reordered, the system's first. Returns 0 or -ENOMEM (s is unchanged then). */
int boot_share_finish(BootShare *b, Session *s, BootShareHotBytesFn hot_bytes, void *userdata);
