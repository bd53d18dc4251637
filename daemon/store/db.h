/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/fid.h"
#include "common/macro.h"
#include "store/move-reason.h"
#include "store/profile-kind.h"

/* The recorder's SQLite store. Only this module uses SQLite. It never logs: callers log.
 *
 * Schema (see db.c, migrations are an append-only list under PRAGMA user_version):
 *   files(id, fsid, handle_type, handle, dev, ino, generation, path, size, mtime_ns, first_seen, last_seen)
 *         unique (fsid, handle_type, handle): a file is stored once, sessions refer to it
 *   profiles(id, name UNIQUE, kind, updated, recorded, uid)
 *         uid: the lowest real uid that recorded a session of it (boot: 0); NULL for the app profiles
 *         recorded before seekless kept uids (schema 2), until their next session
 *   sessions(id, profile_id, boot_id, started_realtime, duration_usec, n_files, complete, uid)
 *   session_files(session_id, position, file_id, offset_usec)
 *   profile_files(profile_id, position, file_id, score, seen): the merged order, rewritten on each merge
 *   session_ranges(session_id, position, file_id, offset, length, offset_usec): the byte ranges a session
 *         with page data read, in first-touch order; a session without any has no page data
 *   profile_ranges(profile_id, position, file_id, offset, length): the merged ranges in layout order,
 *         rewritten with profile_files; length 0 (offset 0) is the whole file at its size when read
 */

typedef struct Db Db;

/* A file as recorded in one session. */
typedef struct DbSessionFile {
        FileKey key;
        uint64_t dev;           /* st_dev at recording time (informational, changes with loop devices) */
        uint64_t ino;
        uint32_t generation;
        const char *path;       /* absolute path at recording time */
        uint64_t size;
        int64_t mtime_ns;
        uint64_t offset_usec;   /* first access, relative to session start */
} DbSessionFile;

/* A byte range a session read (with page data). */
typedef struct DbSessionRange {
        size_t file;                    /* index into DbSession.files */
        uint64_t offset, length;        /* bytes, multiples of the page size */
        uint64_t offset_usec;           /* first touch, relative to the session start */
} DbSessionRange;

/* Bytes of a filesystem's block device a session read: its metadata (inode tables, directories, extent
 * blocks), never relocated. */
typedef struct DbMetaRange {
        uint64_t fsid;                  /* the filesystem (files.fsid) */
        uint64_t offset, length;        /* bytes of its device, multiples of the page size */
        uint64_t offset_usec;           /* first touch, relative to the session start (0 when read back) */
} DbMetaRange;

typedef struct DbSession {
        const char *profile;    /* "boot" or the executable's absolute path */
        ProfileKind kind;
        const char *boot_id;    /* 32 hex chars */
        uint64_t started_realtime_usec;
        uint64_t duration_usec;
        bool complete;
        bool prefetched;        /* its start was prefetched: its ranges and metadata miss what the prefetch
                                 * read (kept besides it: the profile's newest session that was not) */
        uid_t uid;              /* the launching process's real uid (boot: 0; UID_INVALID: unknown) */
        const DbSessionFile *files;   /* in first-access order; position = index */
        size_t n_files;
        const DbSessionRange *ranges;   /* in first-touch order; NULL/0: the session has no page data
                                         * (all its files count whole, as before). A file of a session
                                         * with page data but without any range was cached when read:
                                         * it says nothing about the file's ranges. */
        size_t n_ranges;
        const DbMetaRange *meta;        /* in first-touch order; NULL/0: none recorded */
        size_t n_meta;
} DbSession;

/* Open or create the database at path (":memory:" for tests): WAL mode, foreign keys on, migrations run,
 * every statement prepared once.
 * Errors: -EBADMSG the file is not a database or is corrupt (the caller moves it aside and retries),
 *         -EPROTO the database was written by a newer seekless (user_version above what we know),
 *         other negative errno for I/O. */
int db_open(const char *path, Db **ret);
/* Open the existing database at path for reading only, as it is on the disk, writing nothing at all: no
 * lock, no WAL or shm file made, and a WAL left behind not touched (SQLite's immutable=1: for a
 * filesystem mounted read-only, the initramfs stage's). Nothing is migrated.
 * Errors: -ENOENT no such file, -EUCLEAN a WAL left behind that is not empty (what it holds would not be
 *         read: the store as the file alone has it may be stale, or read as corrupt), -EBADMSG not a
 *         database or not seekless's, -EPROTO a newer schema, -ESTALE an older schema (seeklessd migrates
 *         it at its next start), other negative errno for I/O. */
int db_open_readonly(const char *path, Db **ret);
Db *db_free(Db *db);
DEFINE_TRIVIAL_CLEANUP_FUNC(Db *, db_free);

/* Highest schema version this code knows. */
int db_schema_version(void);

/* The file's pages (PRAGMA page_count), those free in it (left by deleted rows: reused, but kept by the
 * file until handed back), the page size, and whether free pages can be handed back a few at a time
 * (auto_vacuum = INCREMENTAL: every database made since seekless sets it; an older one until its first
 * db_vacuum_step()). */
typedef struct DbSpace {
        uint64_t pages, free_pages, page_size;
        bool incremental;
} DbSpace;
int db_space(Db *db, DbSpace *ret);
/* Hands up to n free pages back to the filesystem (the file shrinks at the next checkpoint). An older
 * database is converted instead, by one VACUUM: it rewrites the live pages (a moment for a small store)
 * and hands back every free page. Outside a transaction. Returns the free pages left, or a negative errno. */
int64_t db_vacuum_step(Db *db, unsigned n);
/* Copies the WAL into the database file and truncates the WAL to nothing, without waiting for other
 * connections: -EBUSY while one still reads an older state (try again later). */
int db_checkpoint_truncate(Db *db);

/* Store one session in a single transaction: upsert its profile (its uid lowered to the session's) and
 * files (path/size/mtime/last_seen refreshed), insert the session and its files, then delete the
 * profile's sessions beyond the newest `keep` ones and any file no session refers to any more. */
int db_add_session(Db *db, const DbSession *s, unsigned keep, int64_t *ret_session_id);

/* Sessions recorded for `profile` during `boot_id`. */
int db_count_sessions_in_boot(Db *db, const char *profile, const char *boot_id, unsigned *ret);
typedef struct DbBootCount {
        char *profile;
        unsigned n;
} DbBootCount;
/* The same for every profile with sessions during `boot_id`, by name. */
int db_count_sessions_in_boot_all(Db *db, const char *boot_id, DbBootCount **ret, size_t *ret_n);
void db_boot_counts_free(DbBootCount *l, size_t n);

/* A file row as stored. */
typedef struct DbFile {
        int64_t id;
        FileKey key;
        uint64_t ino;
        uint32_t generation;
        char *path;
        uint64_t size;
        int64_t mtime_ns;
} DbFile;

/* A byte range of a file: a session's (DbMergeInput) or a profile's (db_store_profile_ranges()). */
typedef struct DbRange {
        int64_t file_id;
        uint64_t offset, length;        /* length 0 in a profile's: the whole file */
} DbRange;

/* The inputs of a merge: the profile's newest `keep` sessions (newest first), each with its file ids in
 * position order and its ranges in first-touch order, and the distinct files they reference. */
typedef struct DbMergeInput {
        size_t n_sessions;
        int64_t *session_ids;      /* newest (highest id) first */
        int64_t **session_files;   /* session_files[i] has n_session_files[i] file ids */
        size_t *n_session_files;
        DbRange **session_ranges;  /* session_ranges[i] has n_session_ranges[i] ranges; 0: no page data */
        size_t *n_session_ranges;
        DbFile *files;
        size_t n_files;
} DbMergeInput;
void db_merge_input_free(DbMergeInput *in);   /* frees the contents, not the struct */

int db_load_merge_input(Db *db, const char *profile, unsigned keep, DbMergeInput *ret);

/* Replace the profile's merged order. entries are in profile order. */
typedef struct DbProfileEntry {
        int64_t file_id;
        double score;
        unsigned seen;
} DbProfileEntry;
int db_store_profile(Db *db, const char *profile, const DbProfileEntry *entries, size_t n);
/* The same with the profile's ranges in layout order (every file of entries should have one; length 0: the
 * whole file). db_store_profile() stores each file whole, in file order. A range of a file not in entries:
 * -EINVAL. */
int db_store_profile_ranges(Db *db, const char *profile, const DbProfileEntry *entries, size_t n,
                            const DbRange *ranges, size_t n_ranges);

/* Refresh a file's path/size/mtime (it was renamed or grew) or drop a file that vanished or changed
 * identity: the file disappears from every session and profile. */
int db_update_file(Db *db, int64_t file_id, const char *path, uint64_t size, int64_t mtime_ns);
int db_delete_file(Db *db, int64_t file_id);

typedef struct DbProfileInfo {
        char *name;
        ProfileKind kind;
        unsigned n_sessions;
        unsigned n_launches;       /* sessions ever recorded (not capped by pruning) */
        unsigned n_files;          /* files in the merged order */
        uint64_t bytes;            /* their total size */
        uint64_t updated_realtime_usec;
        uid_t uid;                 /* the lowest uid that recorded it, UID_INVALID if unknown */
} DbProfileInfo;
void db_profile_infos_free(DbProfileInfo *p, size_t n);
int db_list_profiles(Db *db, DbProfileInfo **ret, size_t *ret_n);   /* ordered: boot first, then by name */

typedef struct DbProfileFile {
        DbFile file;
        double score;
        unsigned seen;
} DbProfileFile;
void db_profile_files_free(DbProfileFile *p, size_t n);
/* -ENOENT if there is no such profile. */
int db_get_profile(Db *db, const char *name, ProfileKind *ret_kind, DbProfileFile **ret, size_t *ret_n);

typedef struct DbProfileRange {
        size_t file;                    /* index into the DbProfileFile array db_get_profile() returned */
        uint64_t offset, length;        /* bytes; a file counted whole is one range 0..its size */
} DbProfileRange;
/* The profile's merged ranges in layout order (interleaved across files as the starts read them). Every
 * file of `files` has at least one range: a file the stored ranges do not name (or whose ranges all lie
 * beyond its size now) is one range 0..its size, after the others; ranges are cut at the file's size.
 * Ranges of files not in `files` are left out. -ENOENT: no such profile. */
int db_get_profile_ranges(Db *db, const char *name, const DbProfileFile *files, size_t n_files,
                          DbProfileRange **ret, size_t *ret_n);

/* The filesystem metadata of the profile's newest session that recorded any (the metadata's place is the
 * filesystem's as it is now: older sessions' blocks may have moved, and db_add_session() deletes their rows
 * when a session brings its own), in first-touch order; offset_usec 0. 0 rows when none was recorded.
 * -ENOENT: no such profile. */
int db_get_profile_metadata(Db *db, const char *name, DbMetaRange **ret, size_t *ret_n);

typedef struct DbSessionInfo {
        int64_t id;
        char *profile;
        ProfileKind kind;
        char *boot_id;
        uint64_t started_realtime_usec;
        uint64_t duration_usec;
        unsigned n_files;
        bool complete;
        uid_t uid;
} DbSessionInfo;
void db_session_infos_free(DbSessionInfo *p, size_t n);
int db_list_sessions(Db *db, DbSessionInfo **ret, size_t *ret_n);   /* newest first */

/* -ENOENT if there is no such profile. Deletes its sessions and orphaned files too. */
int db_forget_profile(Db *db, const char *name);
int db_forget_all(Db *db, unsigned *ret_n_profiles);

/* The caps on app profiles (seekless.conf(5)), applied after each session is stored. */
typedef enum EvictReason {
        EVICT_PER_USER,         /* MaxProfilesPerUser=: the user had too many */
        EVICT_TOTAL,            /* MaxProfiles=: there were too many */
        _EVICT_REASON_MAX,
        _EVICT_REASON_INVALID = -EINVAL,
} EvictReason;

const char *evict_reason_to_string(EvictReason r);    /* the setting's name: "MaxProfilesPerUser", ... */

typedef struct DbEvicted {
        char *name;
        uid_t uid;              /* its owner; UID_INVALID if unknown */
        EvictReason reason;
} DbEvicted;
void db_evicted_free(DbEvicted *e, size_t n);

/* After a session of `profile` was stored, in one transaction: if the profile is a user's (its uid above
 * SYSTEM_UID_MAX) and that user has more than max_per_user app profiles, delete the user's least recently
 * updated ones (never the one just stored), so that a user's flood evicts only that user's profiles. Then,
 * while there are more than max_profiles app profiles, delete the least recently updated of the users'
 * (of any user, or with no known uid), and only after a session of the system's profile, once no user's
 * is left, the least recently updated of the system's. After a user's session, when only the system's
 * are left, the profile just stored goes itself: users never displace the system's profiles. The boot
 * profile is never evicted. Profiles are deleted like db_forget_profile(), with the files no other
 * profile refers to. *ret lists the evicted profiles in the order they went. -ENOENT if there is no such
 * profile. */
int db_evict_profiles(Db *db, const char *profile, unsigned max_profiles, unsigned max_per_user,
                      DbEvicted **ret, size_t *ret_n);

int db_counts(Db *db, unsigned *ret_profiles, unsigned *ret_sessions, unsigned *ret_files);

/* ---- optimizer state (db-run.c) ---- */

typedef enum RunFileState {
        RUN_FILE_PENDING,
        RUN_FILE_DONE,
        RUN_FILE_IN_PLACE,
        RUN_FILE_SKIPPED,
        RUN_FILE_RETRY,
        _RUN_FILE_STATE_MAX,
        _RUN_FILE_STATE_INVALID = -EINVAL,
} RunFileState;

const char *run_file_state_to_string(RunFileState s);

/* A run's state; the strings are what the database stores and RunFinished carries. */
typedef enum RunState {
        RUN_RUNNING,
        RUN_DONE,
        RUN_CANCELLED,
        RUN_FAILED,
        _RUN_STATE_MAX,
        _RUN_STATE_INVALID = -EINVAL,
} RunState;

const char *run_state_to_string(RunState s);    /* "running", "done", "cancelled", "failed" */
RunState run_state_from_string(const char *s);

/* Which layout quality snapshot of a profile: taken when a run starts, or when it ends. */
typedef enum QualityWhich {
        QUALITY_BEFORE,
        QUALITY_AFTER,
        _QUALITY_WHICH_MAX,
        _QUALITY_WHICH_INVALID = -EINVAL,
} QualityWhich;

const char *quality_which_to_string(QualityWhich w);    /* "before", "after" */

typedef struct DbRunFile {
        DbFile file;            /* as stored; size/mtime_ns here are the values at planning time */
        uint64_t offset, length;        /* the range of the file (bytes); length 0: the whole file */
        size_t position;
        RunFileState state;
        char *reason;
        uint64_t bytes;
} DbRunFile;
void db_run_files_free(DbRunFile *f, size_t n);

typedef struct DbRunInfo {
        int64_t id;
        uint64_t fsid;
        char *mount;
        uint64_t started, finished;     /* CLOCK_REALTIME usec */
        RunState state;
        uint64_t donor_runs, moved_files, moved_bytes;
} DbRunInfo;
void db_run_infos_free(DbRunInfo *r, size_t n);

/* A run and its planned entries (file id, planned size and mtime, the range: offsets[i] and lengths[i]
 * bytes, length 0 for the whole file; offsets/lengths NULL: all whole files), in layout order, positions
 * 0..n-1 (a file may have several entries), in one transaction that is on the disk when this returns (a
 * power cut during the run leaves the run to resume). */
int db_run_create(Db *db, uint64_t fsid, const char *mount, const int64_t *file_ids, const uint64_t *sizes,
                  const int64_t *mtimes, const uint64_t *offsets, const uint64_t *lengths, size_t n,
                  int64_t *ret_run_id);
/* Set one entry's (position's) state; on the disk at the next WAL sync, which a power cut may take back. */
int db_run_file_set(Db *db, int64_t run_id, size_t position, RunFileState state, MoveReason why,
                    const char *reason, uint64_t bytes);
/* The same, on the disk when this returns (this commit and every one before it): the checkpoint of an entry
 * the mover is done with. */
int db_run_file_checkpoint(Db *db, int64_t run_id, size_t position, RunFileState state, MoveReason why,
                           const char *reason, uint64_t bytes);
int db_run_finish(Db *db, int64_t run_id, RunState state, uint64_t donor_runs, uint64_t moved_files,
                  uint64_t moved_bytes);
/* Runs still marked running (the daemon died during them): to resume. */
int db_runs_unfinished(Db *db, DbRunInfo **ret, size_t *ret_n);
/* The entries of a run in position order (all states), with their ranges. */
int db_run_files(Db *db, int64_t run_id, DbRunFile **ret, size_t *ret_n);
/* The newest finished run on a filesystem; -ENOENT if none. */
int db_run_last(Db *db, uint64_t fsid, DbRunInfo *ret);

/* Layout quality snapshots of a profile: "before" (taken when a run starts) and "after" (when it ends). */
typedef struct DbQuality {
        uint64_t taken;
        uint64_t files, extents, discontinuities, span;
        double modeled_ms;
} DbQuality;
int db_quality_set(Db *db, const char *profile, QualityWhich which, const DbQuality *q);
int db_quality_get(Db *db, const char *profile, QualityWhich which, DbQuality *ret);   /* -ENOENT if none */

/* A file's extents as they were before the newest run that included it (for "before" pictures). */
int db_extents_before_set(Db *db, int64_t file_id, const uint64_t *physical, const uint64_t *length, size_t n);
int db_extents_before_get(Db *db, int64_t file_id, uint64_t **ret_physical, uint64_t **ret_length, size_t *ret_n);

/* One more entry in a run: a file's range (length 0: the whole file; state pending; set it with
 * db_run_file_set()). */
int db_run_add_file(Db *db, int64_t run_id, size_t position, int64_t file_id, uint64_t size, int64_t mtime_ns,
                    uint64_t offset, uint64_t length);
/* The entries of each file's newest run that are "retry" for this reason (MOVE_REASON_RUNNING: the
 * early-boot pass's queue), or still "pending" with it (see db_run_files_waiting()), by file and offset,
 * each range once: file.size and file.mtime_ns are the values when they were planned, offset/length the
 * range; position, reason and bytes are not set. */
int db_retry_entries(Db *db, MoveReason why, DbRunFile **ret, size_t *ret_n);
/* The pending entries of a run wait for why: until they are checkpointed they stay in that queue, so a run
 * killed before it reached them leaves them to the next one (the early-boot pass's runs). */
int db_run_files_waiting(Db *db, int64_t run_id, MoveReason why);
/* Closes (cancelled, with the moves its checkpoints count) every run still marked running that has entries
 * waiting for why: runs killed before they finished, whose waiting entries stay queued. Returns how many. */
int db_runs_close_waiting(Db *db, MoveReason why);
/* 1 if the newest run that had the file moved every entry of it (or found it in place) and planned it at
 * this size and mtime, else 0. */
int db_run_file_settled(Db *db, int64_t file_id, uint64_t size, int64_t mtime_ns);

/* How long a statement waits for a lock another connection holds before it fails with -EBUSY:
 * DB_BUSY_TIMEOUT_MSEC from db_open(); shorter where the caller has a better thing to do than wait. */
#define DB_BUSY_TIMEOUT_MSEC 5000
int db_set_busy_timeout(Db *db, unsigned msec);
