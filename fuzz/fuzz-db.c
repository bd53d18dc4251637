/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A database file as seeklessd finds it in its state directory: the input is written as seekless.db and
 * opened with db_open() (WAL mode, migrations, the probe of every table), then every query the daemon reads
 * it with runs on it, as the daemon runs them: the status counts, the boot's sessions, ListProfiles, each
 * profile (GetProfile, the merge input, its quality snapshots, the extents before the last run, a re-merge
 * of its sessions through profile_merge(), whose file checks find no filesystem mounted), ListSessions,
 * the runs to resume and their files, each filesystem's last run, the early pass's queue; then a session
 * is stored and the profile caps applied, which read and rewrite the same rows. Checked: db_open() succeeds, or
 * says the file is not seekless's (-EBADMSG: the daemon moves it aside and starts afresh) or a newer
 * seekless's (-EPROTO); what the reads return holds what the daemon relies on (names, paths, kinds and
 * states from their tables). */
#include <inttypes.h>

#include "store/db.h"
#include "fuzz-util.h"
#include "profile/profile.h"

static char db_path[4096];

/* The boot id of the committed seed databases (tests make them with --boot-id=). */
#define BOOT_ID "0123456789abcdef0123456789abcdef"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_log_setup();
        fuzz_path(db_path, sizeof db_path, "seekless.db");
        return 0;
}

static void remove_db(void) {
        char p[4096 + 8];

        (void) unlink(db_path);
        snprintf(p, sizeof p, "%s-wal", db_path);
        (void) unlink(p);
        snprintf(p, sizeof p, "%s-shm", db_path);
        (void) unlink(p);
}

static int no_mount(uint64_t fsid, void *userdata) {
        return -ENODEV;
}

static void read_profile(Db *db, const DbProfileInfo *p, uint64_t *fsid) {
        ProfileOptions o = { .keep_boots = 10, .keep_launches = 5, .min_launch_files = 2, .boot_id = BOOT_ID,
                             .open_mount = no_mount };
        DbMergeInput in = {};
        DbProfileFile *f = NULL;
        ProfileKind kind;
        DbQuality q;
        size_t n = 0;

        if (db_get_profile(db, p->name, &kind, &f, &n) >= 0) {
                FUZZ_ASSERT(kind == p->kind);
                for (size_t i = 0; i < n; i++) {
                        _cleanup_free_ uint64_t *ph = NULL, *len = NULL;
                        size_t k = 0;

                        FUZZ_ASSERT(f[i].file.path && f[i].file.key.handle_len <= FID_HANDLE_MAX);
                        (void) db_extents_before_get(db, f[i].file.id, &ph, &len, &k);
                        *fsid = f[i].file.key.fsid;
                }
                db_profile_files_free(f, n);
        }
        if (db_load_merge_input(db, p->name, 10, &in) >= 0) {
                FUZZ_ASSERT(in.n_sessions <= 10);
                for (size_t i = 0; i < in.n_files; i++)
                        FUZZ_ASSERT(in.files[i].path && in.files[i].key.handle_len <= FID_HANDLE_MAX);
                db_merge_input_free(&in);
        }
        {
                DbMetaRange *m = NULL;
                size_t k = 0;

                if (db_get_profile_metadata(db, p->name, &m, &k) >= 0)
                        for (size_t i = 0; i < k; i++)
                                FUZZ_ASSERT(m[i].length > 0 && m[i].offset <= INT64_MAX);
                free(m);
        }
        (void) db_quality_get(db, p->name, QUALITY_BEFORE, &q);
        (void) db_quality_get(db, p->name, QUALITY_AFTER, &q);
        (void) profile_merge(db, p->name, p->kind, 0, &o);
}

static void read_all(Db *db) {
        DbProfileInfo *p = NULL;
        DbSessionInfo *s = NULL;
        DbBootCount *bc = NULL;
        DbRunInfo *runs = NULL, last;
        DbRunFile *retry = NULL;
        size_t n = 0, n_runs = 0;
        unsigned a, b, c;
        uint64_t fsid = 0;

        (void) db_counts(db, &a, &b, &c);
        (void) db_count_sessions_in_boot(db, "boot", BOOT_ID, &a);
        if (db_count_sessions_in_boot_all(db, BOOT_ID, &bc, &n) >= 0)
                db_boot_counts_free(bc, n);

        if (db_list_profiles(db, &p, &n) >= 0) {
                if (fuzz_verbose())
                        fprintf(stderr, "%zu profiles\n", n);
                for (size_t i = 0; i < n; i++) {
                        FUZZ_ASSERT(p[i].name && (p[i].kind == PROFILE_BOOT || p[i].kind == PROFILE_APP));
                        read_profile(db, &p[i], &fsid);
                }
                db_profile_infos_free(p, n);
        }
        if (db_list_sessions(db, &s, &n) >= 0) {
                for (size_t i = 0; i < n; i++)
                        FUZZ_ASSERT(s[i].profile && s[i].boot_id);
                db_session_infos_free(s, n);
        }
        if (db_runs_unfinished(db, &runs, &n_runs) >= 0) {
                for (size_t i = 0; i < n_runs; i++) {
                        DbRunFile *f = NULL;

                        FUZZ_ASSERT(runs[i].mount && runs[i].state == RUN_RUNNING);
                        if (db_run_files(db, runs[i].id, &f, &n) >= 0) {
                                for (size_t k = 0; k < n; k++)
                                        FUZZ_ASSERT(f[k].reason && f[k].file.path && f[k].state >= 0 &&
                                                    f[k].state < _RUN_FILE_STATE_MAX);
                                db_run_files_free(f, n);
                        }
                        fsid = runs[i].fsid;
                }
                db_run_infos_free(runs, n_runs);
        }
        /* its state may read "running": a BLOB 'running' passes the query's state <> 'running' and reads as
         * that text (its callers use the counts and times, not the state) */
        if (db_run_last(db, fsid, &last) >= 0) {
                FUZZ_ASSERT(last.mount);
                free(last.mount);
        }
        if (db_retry_entries(db, MOVE_REASON_RUNNING, &retry, &n) >= 0)
                db_run_files_free(retry, n);
}

static void write_some(Db *db) {
        const DbSessionFile files[] = {
                { .key = { .fsid = 0x5eec1e55, .handle_type = 1, .handle_len = 8, .handle = { 12, 0, 0, 0, 1 } },
                  .ino = 12, .generation = 1, .path = "/usr/bin/prog", .size = 4096 },
                { .key = { .fsid = 0x5eec1e55, .handle_type = 1, .handle_len = 8, .handle = { 13, 0, 0, 0, 1 } },
                  .ino = 13, .generation = 1, .path = "/usr/lib/libprog.so", .size = 8192, .offset_usec = 5 },
        };
        DbEvicted *e = NULL;
        size_t n = 0;
        int64_t id;

        if (db_add_session(db, &(DbSession) { .profile = "/usr/bin/prog", .kind = PROFILE_APP, .boot_id = BOOT_ID,
                                              .complete = true, .uid = 1000, .files = files, .n_files = 2 },
                           5, &id) < 0)
                return;
        if (db_evict_profiles(db, "/usr/bin/prog", 2, 1, &e, &n) >= 0) {
                for (size_t i = 0; i < n; i++)
                        FUZZ_ASSERT(e[i].name);
                db_evicted_free(e, n);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(db_freep) Db *db = NULL;
        int r;

        remove_db();
        fuzz_write(db_path, data, size);
        r = db_open(db_path, &db);
        if (r >= 0) {
                read_all(db);
                write_some(db);
                read_all(db);
        }
        if (fuzz_verbose())
                fprintf(stderr, "db_open: %s\n", r < 0 ? strerror(-r) : "ok");
        /* the daemon moves a database aside on -EBADMSG and leaves it on -EPROTO (a newer seekless's); any
         * other error stops it at every start: on a file in memory, only a database it can use may pass */
        FUZZ_ASSERT(r >= 0 || r == -EBADMSG || r == -EPROTO);
        db = db_free(db);
        remove_db();
        return 0;
}
