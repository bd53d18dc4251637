/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"
#include "fs/mount-fds.h"
#include "record/session.h"

/* A recorded session's way into its profile: each file checked by its handle (still there, still the same
 * file, a regular one) and named, the session stored, then the profile's newest sessions merged into one
 * read order (rank.c), with the files that vanished since they were recorded dropped from the database and
 * the renamed ones updated. Knows nothing of the daemon: filesystems are reached through a callback, and
 * what happened to single files is told to another, for the caller's log. Never logs. */

typedef enum ProfileNoteKind {
        PROFILE_NOTE_UNREACHABLE,       /* a session file's filesystem is not mounted: fsid, error */
        PROFILE_NOTE_LEFT_OUT,          /* a session file is not stored: index; error, or 0 when it has no
                                         * name we can trust */
        PROFILE_NOTE_DROPPED,           /* merge: path is gone or replaced since it was recorded, and dropped */
        PROFILE_NOTE_DROP_FAILED,       /* merge: ...but deleting it from the database failed: path, error */
        PROFILE_NOTE_UPDATE_FAILED,     /* merge: updating a renamed or resized file failed: path (its new
                                         * name, NULL if the kernel could not name it), error */
        _PROFILE_NOTE_MAX,
        _PROFILE_NOTE_INVALID = -EINVAL,
} ProfileNoteKind;

typedef struct ProfileNote {
        ProfileNoteKind kind;
        size_t index;
        uint64_t fsid;
        const char *path;
        int error;                      /* negative errno, or 0 */
} ProfileNote;

typedef struct ProfileOptions {
        unsigned keep_boots;            /* KeepBoots=: sessions of the boot profile kept and merged */
        unsigned keep_launches;         /* KeepLaunches=: the same for each program */
        unsigned min_launch_files;      /* MinLaunchFiles=: launches with fewer files are not stored */
        const char *boot_id;            /* stored with each session */
        MountFdOpenFn open_mount;       /* a directory fd on a filesystem, by fsid */
        void (*note)(const ProfileNote *n, void *userdata);    /* may be NULL */
        void *userdata;                 /* for both */
} ProfileOptions;

/* A session's files as they are stored: the ones that could be checked, in first-access order. */
typedef struct ProfileSessionFiles {
        DbSessionFile *files;           /* files[i].path is paths[i] */
        char **paths;
        size_t n;
        size_t *index;                  /* per session file: its index in files, SIZE_MAX if left out */
        bool *warm;                     /* per session file: more of its pages are cached than the session
                                         * saw read, so its ranges say what was missing from the cache, not
                                         * what was read: they are not stored (the file counts as cached) */
        size_t n_warm;                  /* how many */
} ProfileSessionFiles;
void profile_session_files_done(ProfileSessionFiles *f);

/* Checks each of the session's files by its handle, once: its size, mtime and current name (or, when the
 * kernel cannot name it any more, the name it had shortly after its read). Files that are gone, not
 * regular, on a filesystem not mounted now or without a name are left out (each told as a note).
 * Returns 0 or -ENOMEM. */
int profile_resolve_session(const Session *s, const ProfileOptions *o, ProfileSessionFiles *ret);

/* The session's page ranges for the database (bytes), of the files f kept, in first-touch order; NULL and 0
 * when the session was not recorded with pages. Returns 0 or -ENOMEM. */
int profile_session_ranges(const Session *s, const ProfileSessionFiles *f, DbSessionRange **ret, size_t *ret_n);

/* The session's filesystem metadata for the database (bytes of the devices), in first-touch order. Returns
 * 0 or -ENOMEM. */
int profile_session_metadata(const Session *s, DbMetaRange **ret, size_t *ret_n);

/* Stores the session with the files resolved for it (its duration ends at now_usec, CLOCK_MONOTONIC),
 * keeping the profile's newest KeepBoots=/KeepLaunches= sessions. A prefetched session is stored as such,
 * without metadata (the profile keeps the newest session that was not prefetched, and its metadata;
 * seeklessd(8), PREFETCH). A session cut short by its
 * MaxSessionFiles= or by lost events is stored as incomplete. Returns 1 and the session's id when stored,
 * 0 when it was not worth storing (a launch with fewer than MinLaunchFiles= files, a boot with none), or a
 * negative errno from the database. */
int profile_store_session(Db *db, const Session *s, const ProfileSessionFiles *f, uint64_t now_usec,
                          const ProfileOptions *o, int64_t *ret_session_id);

/* Re-merges the profile from its newest sessions. Each of their files is checked by its handle first:
 * one that vanished or changed identity is deleted from the database (from every session and profile),
 * one renamed or resized is updated; a file on a filesystem not mounted now is kept as it is (it cannot
 * be checked). The files of the session fresh_session_id (one profile_store_session() just stored, or 0)
 * were checked a moment ago and are not opened again. Returns 0 or a negative errno. */
int profile_merge(Db *db, const char *profile, ProfileKind kind, int64_t fresh_session_id,
                  const ProfileOptions *o);

/* Each file under its name now: one renamed since it was recorded gets the new name (in f only: the
 * database learns it at the profile's next merge). */
void profile_refresh_paths(DbProfileFile *f, size_t n, const ProfileOptions *o);
