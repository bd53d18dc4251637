/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The store's connection (db.c, db-space.c): opening, migrations from each older schema, files that
 * are not a store of ours, the prefetch, a second connection, the space handed back. */

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test-db-util.h"

TEST(kind_strings) {
        ASSERT_STREQ(profile_kind_to_string(PROFILE_BOOT), "boot");
        ASSERT_STREQ(profile_kind_to_string(PROFILE_APP), "app");
        ASSERT_TRUE(!profile_kind_to_string(_PROFILE_KIND_MAX));
        ASSERT_EQ(profile_kind_from_string("boot"), PROFILE_BOOT);
        ASSERT_EQ(profile_kind_from_string("app"), PROFILE_APP);
        ASSERT_EQ(profile_kind_from_string("Boot"), _PROFILE_KIND_INVALID);
        ASSERT_EQ(profile_kind_from_string(""), _PROFILE_KIND_INVALID);
        ASSERT_EQ(profile_kind_from_string(NULL), _PROFILE_KIND_INVALID);
}

TEST(migrations_idempotent) {
        const char *p = tmp_path("migrate.db");
        Db *db = NULL;

        ASSERT_TRUE(db_schema_version() >= 1);

        ASSERT_OK(db_open(p, &db));
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 1000, 3, 1, 2, 3));
        db = db_free(db);
        ASSERT_TRUE(!db);
        ASSERT_EQ(user_version(p), db_schema_version());

        ASSERT_OK(db_open(p, &db));
        check_counts(db, 1, 1, 3);
        db = db_free(db);
        ASSERT_OK(db_open(p, &db));
        check_counts(db, 1, 1, 3);
        db = db_free(db);
        ASSERT_EQ(user_version(p), db_schema_version());

        /* An empty file is a new database, not a corrupt one. */
        const char *e = tmp_path("empty.db");
        write_file(e, "", 0);
        ASSERT_OK(db_open(e, &db));
        check_counts(db, 0, 0, 0);
        db = db_free(db);

        ASSERT_TRUE(!db_free(NULL));
        (void) unlink(p);
        (void) unlink(e);
}

TEST(newer_version) {
        const char *p = tmp_path("newer.db");
        Db *db = NULL;
        sqlite3 *s = NULL;
        char sql[64];

        ASSERT_OK(db_open(p, &db));
        db = db_free(db);

        ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        (void) snprintf(sql, sizeof sql, "PRAGMA user_version = %d", db_schema_version() + 1);
        ASSERT_EQ(sqlite3_exec(s, sql, NULL, NULL, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);

        db = (Db *) 0x1;
        ASSERT_ERROR(db_open(p, &db), EPROTO);
        ASSERT_TRUE(db == (Db *) 0x1);   /* not written on failure */
        ASSERT_EQ(user_version(p), db_schema_version() + 1);

        (void) unlink(p);
}

/* A valid SQLite file that seekless did not write: a negative user_version (the code before indexed
 * migrations[-1]), tables at version 0, and a foreign schema under one of our versions. Each is refused
 * as corrupt (EBADMSG: the daemon moves it aside), not with EIO. */
static void check_foreign(const char *sql) {
        const char *p = tmp_path("foreign.db");
        Db *db = NULL;
        sqlite3 *s = NULL;

        (void) unlink(p);
        ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(s, sql, NULL, NULL, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);
        fprintf(stderr, "   %s\n", sql);
        ASSERT_ERROR(db_open(p, &db), EBADMSG);
        ASSERT_TRUE(!db);
        (void) unlink(p);
}

/* A real database, cut short at `size` bytes. */
static void check_truncated(off_t size) {
        const char *p = tmp_path("truncated.db");
        Db *db = NULL;
        unsigned nums[50];
        struct stat st;

        ASSERT_OK(db_open(p, &db));
        for (unsigned s = 0; s < 20; s++) {
                for (unsigned i = 0; i < ELEMENTSOF(nums); i++)
                        nums[i] = s * 50 + i;
                ASSERT_OK(add(db, "boot", PROFILE_BOOT, BOOT_A, 1000 + s, nums, ELEMENTSOF(nums), 100, NULL));
        }
        db = db_free(db);

        ASSERT_OK(stat(p, &st));
        fprintf(stderr, "   %lld bytes, truncating to %lld\n", (long long) st.st_size,
                (long long) (size < 0 ? st.st_size / 2 : size));
        ASSERT_OK(truncate(p, size < 0 ? st.st_size / 2 : size));

        ASSERT_ERROR(db_open(p, &db), EBADMSG);
        ASSERT_TRUE(!db);
        (void) unlink(p);
}

/* Pages of the file at fd in the page cache (and read), of its pages in total. */
static size_t resident_pages(int fd, size_t *ret_total) {
        long psz = sysconf(_SC_PAGESIZE);
        unsigned char vec[4096];
        struct stat st;
        size_t n, k = 0;
        void *map;

        ASSERT_OK(fstat(fd, &st));
        n = ((size_t) st.st_size + (size_t) psz - 1) / (size_t) psz;
        ASSERT_TRUE(n > 0 && n <= sizeof vec);
        map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        ASSERT_TRUE(map != MAP_FAILED);
        ASSERT_OK(mincore(map, (size_t) st.st_size, vec));
        ASSERT_OK(munmap(map, (size_t) st.st_size));
        for (size_t i = 0; i < n; i++)
                k += vec[i] & 1;
        *ret_total = n;
        return k;
}

/* Sessions in the store at p, counted by a connection of a process of its own, read-write as the sqlite3
 * shell opens it, that closes at once (the --count-sessions mode of main()): -1 on error. Executed anew,
 * not forked: a forked child would share this process's SQLite state and its locks. */
static int count_sessions(const char *p) {
        sqlite3 *s = NULL;
        sqlite3_stmt *st = NULL;
        int n = -1;

        if (sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(s, "SELECT COUNT(*) FROM sessions", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
                n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(s);
        return n;
}

static int sessions_seen_by_another_process(const char *p) {
        int status;
        pid_t pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                execl("/proc/self/exe", "test-db", "--count-sessions", p, (char *) NULL);
                _exit(254);
        }
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_TRUE(WEXITSTATUS(status) < 254);   /* 255: the child could not count */
        return WEXITSTATUS(status);
}

TEST(foreign) {
        char sql[128];

        check_foreign("PRAGMA user_version = -1");
        check_foreign("PRAGMA user_version = -2000000000");
        check_foreign("CREATE TABLE photos (id INTEGER PRIMARY KEY, data BLOB)");
        (void) snprintf(sql, sizeof sql, "CREATE TABLE photos (id INTEGER); PRAGMA user_version = %d",
                        db_schema_version());
        check_foreign(sql);
}

TEST(corrupt) {
        const char *p = tmp_path("garbage.db");
        char junk[8192];
        Db *db = NULL;

        /* ASCII junk. */
        for (size_t i = 0; i < sizeof junk; i++)
                junk[i] = (char) ('a' + i * 7 % 26);
        write_file(p, junk, sizeof junk);
        ASSERT_ERROR(db_open(p, &db), EBADMSG);

        /* Random bytes. */
        srand(42);
        for (size_t i = 0; i < sizeof junk; i++)
                junk[i] = (char) rand();
        write_file(p, junk, sizeof junk);
        ASSERT_ERROR(db_open(p, &db), EBADMSG);

        /* The right magic followed by junk. */
        memcpy(junk, "SQLite format 3", 16);
        write_file(p, junk, sizeof junk);
        ASSERT_ERROR(db_open(p, &db), EBADMSG);

        ASSERT_TRUE(!db);
        (void) unlink(p);
}

TEST(truncated) {
        check_truncated(-1);      /* half */
        check_truncated(1000);    /* within the first page */
        check_truncated(4096);    /* just the first page */
}

/* Opening a small store reads all of it (in file order, one request per extent) rather than the pages the
 * first queries happen to touch. Observed through the page cache: dropped before the open, complete after
 * it. Without the prefetch the open's own reads (and the kernel's read-ahead around them) leave about half
 * of this 300-session store unread, while a store of a few dozen pages is read whole anyway by the large
 * folios of a 6.18 kernel: hence the size. */
TEST(prefetch) {
        const char *p = tmp_path("prefetch.db");
        _cleanup_close_ int fd = -EBADF;
        unsigned nums[60];
        size_t total = 0, k;
        Db *db = NULL;

        ASSERT_OK(db_open(p, &db));
        for (unsigned s = 0; s < 300; s++) {
                for (unsigned i = 0; i < ELEMENTSOF(nums); i++)
                        nums[i] = (s * 30 + i) % 1000;
                ASSERT_OK(add(db, "boot", PROFILE_BOOT, BOOT_A, 1000 + s, nums, ELEMENTSOF(nums), 1000, NULL));
        }
        db = db_free(db);   /* checkpoints the WAL into the file and removes it */

        fd = open(p, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(fdatasync(fd));
        ASSERT_OK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
        k = resident_pages(fd, &total);
        fprintf(stderr, "   %zu pages, %zu in the page cache after dropping it\n", total, k);
        if (k > 0) {
                /* tmpfs and the like keep their pages: nothing to observe there */
                fprintf(stderr, "   SKIP prefetch: the page cache of %s cannot be dropped\n", tmpdir);
                (void) unlink(p);
                return;
        }

        ASSERT_OK(db_open(p, &db));
        /* the read-ahead is asynchronous; allow it 5 s to complete */
        for (unsigned i = 0; i < 500 && (k = resident_pages(fd, &total)) < total; i++)
                (void) usleep(10000);
        fprintf(stderr, "   %zu of %zu pages in the page cache after db_open()\n", k, total);
        ASSERT_EQ(k, total);
        check_counts(db, 1, 300, 1000);
        db = db_free(db);
        (void) unlink(p);
}

/* The daemon has two connections (the loop's and the plan worker's, opened later). Opening the second must
 * not drop the first one's locks: then an outside reader closing (an administrator's sqlite3) deleted the
 * WAL while the daemon kept writing into it, and every later commit was invisible to others and lost at
 * a crash (found by tests/test-faults.sh: its run checkpoints did not show). */
TEST(second_connection) {
        const char *p = tmp_path("second.db");
        char wal[4096];
        Db *a = NULL, *b = NULL;

        (void) snprintf(wal, sizeof wal, "%s-wal", p);
        ASSERT_OK(db_open(p, &a));
        ASSERT_OK(ADD(a, APP, PROFILE_APP, BOOT_A, 1000, 10, 1, 2, 3));
        ASSERT_OK(db_open(p, &b));
        ASSERT_EQ(sessions_seen_by_another_process(p), 1);
        ASSERT_TRUE(access(wal, F_OK) == 0);    /* the outside reader was not the last connection */
        ASSERT_OK(ADD(a, APP, PROFILE_APP, BOOT_A, 2000, 10, 4, 5));
        ASSERT_EQ(sessions_seen_by_another_process(p), 2);
        b = db_free(b);
        ASSERT_OK(ADD(a, APP, PROFILE_APP, BOOT_A, 3000, 10, 6));
        ASSERT_EQ(sessions_seen_by_another_process(p), 3);
        a = db_free(a);
        (void) unlink(p);
}

/* What migration 4 -> 5 adds, dropped: back to schema 4. */
#define SCHEMA_5_DROP "DROP TABLE session_ranges; DROP TABLE profile_ranges; "
/* What migration 5 -> 6 adds, dropped. */
#define SCHEMA_6_DROP "ALTER TABLE run_files DROP COLUMN range_offset; ALTER TABLE run_files DROP COLUMN range_length; "
/* What migration 6 -> 7 adds, dropped. */
#define SCHEMA_7_DROP "DROP TABLE session_metadata; "
/* What migration 7 -> 8 adds, dropped. */
#define SCHEMA_8_DROP "ALTER TABLE sessions DROP COLUMN prefetched; "

/* A database of schema 2 (before uids): made by the current code and brought back to schema 2's tables
 * (the columns migrations 2 -> 3, 3 -> 4 and 5 -> 6 add and the tables of 4 -> 5 dropped, user_version 2),
 * then opened again. */
TEST(migration_from_2) {
        const char *p = tmp_path("schema2.db");
        Db *db = NULL;
        sqlite3 *s = NULL;

        (void) unlink(p);
        ASSERT_EQ(db_schema_version(), 8);
        ASSERT_OK(db_open(p, &db));
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 1000, 3, 1, 2));
        ASSERT_OK(ADD(db, APP, PROFILE_APP, BOOT_A, 2000, 3, 2, 3));
        db = db_free(db);
        ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(s, "ALTER TABLE sessions DROP COLUMN uid; ALTER TABLE profiles DROP COLUMN uid; "
                               "ALTER TABLE run_files DROP COLUMN why; " SCHEMA_5_DROP SCHEMA_6_DROP SCHEMA_7_DROP SCHEMA_8_DROP
                               "PRAGMA user_version = 2", NULL, NULL, NULL),
                  SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);
        ASSERT_EQ(user_version(p), 2);

        ASSERT_OK(db_open(p, &db));
        ASSERT_EQ(user_version(p), db_schema_version());
        check_counts(db, 2, 2, 3);
        /* the boot is the system's; who launched the app is not known: a user's until a session says */
        ASSERT_EQ(profile_uid(db, "boot"), 0);
        ASSERT_EQ(profile_uid(db, APP), UID_INVALID);
        {
                DbSessionInfo *l = NULL;
                size_t k;

                ASSERT_OK(db_list_sessions(db, &l, &k));
                ASSERT_EQ(k, 2);
                ASSERT_EQ(l[0].uid, 0);
                ASSERT_EQ(l[1].uid, 0);
                db_session_infos_free(l, k);
        }
        ASSERT_OK(ADD_UID(db, APP, 1000, 3000, 2));
        ASSERT_EQ(profile_uid(db, APP), 1000);
        ASSERT_OK(ADD_UID(db, APP, 0, 4000, 2));
        ASSERT_EQ(profile_uid(db, APP), 0);
        db = db_free(db);
        (void) unlink(p);
}

/* Schema 3 kept why a file was not moved as text only; the early-boot pass's queue selected on the text.
 * Migration 3 -> 4 gives the queue's rows (retry, "running executable...") their code, and only those: the
 * queue reads the same after it. */
TEST(migration_from_3) {
        const char *p = tmp_path("schema3.db");
        DbRunFile *q = NULL;
        Db *db = NULL;
        sqlite3 *s = NULL;
        int64_t ids[4], run;
        uint64_t sizes[4] = { 1, 1, 1, 1 };
        int64_t mtimes[4] = { 0, 0, 0, 0 };
        size_t n, k;

        (void) unlink(p);
        ASSERT_OK(db_open(p, &db));
        ASSERT_OK(ADD(db, APP, PROFILE_APP, BOOT_A, 1000, 3, 1, 2, 3, 4));
        {
                sqlite3_stmt *st = NULL;

                n = 0;
                ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
                ASSERT_EQ(sqlite3_prepare_v2(s, "SELECT id FROM files ORDER BY id", -1, &st, NULL), SQLITE_OK);
                while (n < 4 && sqlite3_step(st) == SQLITE_ROW)
                        ids[n++] = sqlite3_column_int64(st, 0);
                sqlite3_finalize(st);
                ASSERT_EQ(sqlite3_close(s), SQLITE_OK);
                ASSERT_EQ(n, 4u);
        }
        ASSERT_OK(db_run_create(db, 1, "/", ids, sizes, mtimes, NULL, NULL, 4, &run));
        ASSERT_OK(db_run_file_set(db, run, 0, RUN_FILE_RETRY, MOVE_REASON_NONE, "running executable", 0));
        ASSERT_OK(db_run_file_set(db, run, 1, RUN_FILE_RETRY, MOVE_REASON_NONE, "running executable or swap", 0));
        ASSERT_OK(db_run_file_set(db, run, 2, RUN_FILE_RETRY, MOVE_REASON_NONE, "open for writing", 0));
        ASSERT_OK(db_run_file_set(db, run, 3, RUN_FILE_SKIPPED, MOVE_REASON_NONE, "running executable", 0));
        db = db_free(db);
        ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(s, "ALTER TABLE run_files DROP COLUMN why; " SCHEMA_5_DROP SCHEMA_6_DROP SCHEMA_7_DROP SCHEMA_8_DROP
                               "PRAGMA user_version = 3", NULL, NULL, NULL),
                  SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);

        ASSERT_OK(db_open(p, &db));
        ASSERT_EQ(user_version(p), db_schema_version());
        {
                /* the entries of before are whole files: a run left unfinished resumes with them whole */
                DbRunFile *rf = NULL;
                size_t nrf = 0;

                ASSERT_OK(db_run_files(db, run, &rf, &nrf));
                ASSERT_EQ(nrf, 4u);
                for (size_t i = 0; i < nrf; i++) {
                        ASSERT_EQ(rf[i].offset, 0);
                        ASSERT_EQ(rf[i].length, 0);
                        ASSERT_EQ(rf[i].file.size, 1);
                }
                db_run_files_free(rf, nrf);
        }
        ASSERT_OK(db_retry_entries(db, MOVE_REASON_RUNNING, &q, &k));
        ASSERT_EQ(k, 2u);
        ASSERT_TRUE((q[0].file.id == ids[0] && q[1].file.id == ids[1]) || (q[0].file.id == ids[1] && q[1].file.id == ids[0]));
        db_run_files_free(q, k);
        ASSERT_OK(db_retry_entries(db, MOVE_REASON_BUSY, &q, &k));
        ASSERT_EQ(k, 0u);
        db_run_files_free(q, k);
        /* from now on the code decides, whatever the text says */
        ASSERT_OK(db_run_file_set(db, run, 2, RUN_FILE_RETRY, MOVE_REASON_RUNNING, "anything at all", 0));
        ASSERT_OK(db_retry_entries(db, MOVE_REASON_RUNNING, &q, &k));
        ASSERT_EQ(k, 3u);
        db_run_files_free(q, k);
        db = db_free(db);
        (void) unlink(p);
}

/* A database of the previous schema (4, whole files only), with a merged profile: migration 4 -> 5 gives
 * each of its files one whole range, in profile order; its sessions have no ranges. */
TEST(migration_from_4) {
        const char *p = tmp_path("schema4.db");
        _cleanup_(db_freep) Db *db = NULL;
        DbMergeInput in = {};
        sqlite3 *s = NULL;

        (void) unlink(p);
        ASSERT_OK(db_open(p, &db));
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 1000, 3, 1, 2, 3));
        ASSERT_OK(ADD(db, APP, PROFILE_APP, BOOT_A, 2000, 3, 5, 4));
        ASSERT_OK(db_load_merge_input(db, "boot", 3, &in));
        ASSERT_OK(db_store_profile(db, "boot", (const DbProfileEntry[]) {
                        { file_id_of(&in, 3), 0, 1 }, { file_id_of(&in, 1), 0.5, 1 }, { file_id_of(&in, 2), 1, 1 } }, 3));
        db_merge_input_free(&in);
        ASSERT_OK(db_load_merge_input(db, APP, 3, &in));
        ASSERT_OK(db_store_profile(db, APP, (const DbProfileEntry[]) {
                        { file_id_of(&in, 5), 0, 1 }, { file_id_of(&in, 4), 1, 1 } }, 2));
        db_merge_input_free(&in);
        db = db_free(db);
        ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(s, SCHEMA_5_DROP SCHEMA_6_DROP SCHEMA_7_DROP SCHEMA_8_DROP "PRAGMA user_version = 4", NULL, NULL, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);
        ASSERT_EQ(user_version(p), 4);

        ASSERT_OK(db_open(p, &db));
        ASSERT_EQ(user_version(p), db_schema_version());
        ASSERT_EQ(count_rows(p, "profile_ranges WHERE length = 0"), 5);
        ASSERT_STREQ(ranges_string(db, "boot"), "3:0+12288 1:0+4096 2:0+8192");
        ASSERT_STREQ(ranges_string(db, APP), "5:0+20480 4:0+16384");
        ASSERT_OK(db_load_merge_input(db, "boot", 3, &in));
        ASSERT_EQ(in.n_sessions, 1u);
        ASSERT_EQ(in.n_session_ranges[0], 0u);
        db_merge_input_free(&in);
        /* no metadata before; a session stores and reads its own after the migration */
        ASSERT_STREQ(meta_string(db, "boot"), "");
        ASSERT_OK(add_meta(db, "boot", 3000, (const DbMetaRange[]) { { .fsid = 7, .offset = 4096, .length = 8192 } },
                           1, 3));
        ASSERT_STREQ(meta_string(db, "boot"), "7:4096+8192");
        db = db_free(db);
        (void) unlink(p);
}

/* Schema 7 had no word of prefetched sessions: after migration 7 -> 8 every session is one that was not
 * prefetched (the one a profile keeps besides its newest). */
TEST(migration_from_7) {
        const char *p = tmp_path("schema7.db");
        Db *db = NULL;
        sqlite3 *s = NULL;

        (void) unlink(p);
        ASSERT_OK(db_open(p, &db));
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 1000, 3, 1, 2));
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_B, 2000, 3, 2, 3));
        db = db_free(db);
        ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(s, SCHEMA_8_DROP "PRAGMA user_version = 7", NULL, NULL, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);

        ASSERT_OK(db_open(p, &db));
        ASSERT_EQ(user_version(p), db_schema_version());
        ASSERT_EQ(count_rows(p, "sessions WHERE prefetched = 0"), 2);
        check_counts(db, 1, 2, 3);
        db = db_free(db);
        (void) unlink(p);
}

/* The database file and its WAL, in bytes. */
static uint64_t db_bytes(const char *path) {
        char wal[300];
        struct stat st;
        uint64_t n = 0;

        if (stat(path, &st) >= 0)
                n += (uint64_t) st.st_size;
        (void) snprintf(wal, sizeof wal, "%s-wal", path);
        if (stat(wal, &st) >= 0)
                n += (uint64_t) st.st_size;
        return n;
}

/* A session of 16 files with 16,384 one-page ranges (as many as a launch keeps). */
static void add_capped_session(Db *db, const char *profile, uint64_t started) {
        const size_t n = 16384;
        _cleanup_free_ DbSessionRange *r = calloc(n, sizeof *r);
        unsigned nums[16];

        ASSERT_TRUE(r);
        for (unsigned i = 0; i < 16; i++)
                nums[i] = 100 + i;
        for (size_t i = 0; i < n; i++)
                r[i] = (DbSessionRange) { .file = i % 16, .offset = (i / 16) * 32 * 4096, .length = 4096,
                                          .offset_usec = i };
        ASSERT_OK(add_ranges(db, profile, started, nums, 16, r, n, 5, NULL));
}

/* Space is handed back: a database made now has auto_vacuum = INCREMENTAL; after a big session is
 * forgotten, vacuum steps hand its pages back and the WAL is truncated: the file and its WAL are as big as
 * before the session. A database made before (auto_vacuum = NONE) is converted by its first step. */
static void check_space_returned(const char *p, bool incremental) {
        _cleanup_(db_freep) Db *db = NULL;
        DbSpace sp;
        uint64_t before, full;
        int64_t left;
        unsigned steps = 0;

        ASSERT_OK(db_open(p, &db));
        ASSERT_OK(db_space(db, &sp));
        ASSERT_EQ(sp.incremental, incremental);
        ASSERT_OK(db_checkpoint_truncate(db));
        before = db_bytes(p);
        add_capped_session(db, APP, 5000);
        full = db_bytes(p);
        ASSERT_TRUE(full > before + 512 * 1024);
        ASSERT_OK(db_forget_profile(db, APP));
        ASSERT_OK(db_space(db, &sp));
        ASSERT_TRUE(sp.free_pages * sp.page_size > 512 * 1024);
        while ((left = db_vacuum_step(db, 64)) > 0)
                ASSERT_TRUE(++steps < 10000);
        ASSERT_EQ(left, 0);
        ASSERT_OK(db_space(db, &sp));
        ASSERT_TRUE(sp.incremental && sp.free_pages == 0);
        /* incremental: a few pages a step */
        ASSERT_TRUE(incremental ? steps >= 2 : steps == 0);
        ASSERT_OK(db_checkpoint_truncate(db));
        fprintf(stderr, "   %s: %" PRIu64 " bytes before, %" PRIu64 " with the session, %" PRIu64 " after, %u steps\n",
                incremental ? "incremental" : "converted", before, full, db_bytes(p), steps);
        ASSERT_TRUE(db_bytes(p) <= before + before / 10);
}

TEST(space) {
        const char *p = tmp_path("space.db");
        sqlite3 *raw = NULL;
        _cleanup_(db_freep) Db *mem = NULL;

        (void) unlink(p);
        {
                _cleanup_(db_freep) Db *db = NULL;

                ASSERT_OK(db_open(p, &db));
                ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 1000, 3, 1, 2, 3));
        }
        check_space_returned(p, true);
        /* as made before: auto_vacuum off */
        ASSERT_EQ(sqlite3_open(p, &raw), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(raw, "PRAGMA auto_vacuum = NONE; VACUUM", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(raw);
        check_space_returned(p, false);
        /* in memory: nothing to truncate */
        ASSERT_OK(db_open(":memory:", &mem));
        ASSERT_OK(db_checkpoint_truncate(mem));
        ASSERT_ERROR(db_vacuum_step(mem, 0), EINVAL);
}

/* The file's bytes, for comparing (NULL-terminated sizes are not needed: the length is returned). */
static char *file_bytes(const char *path, size_t *ret_n) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        char *b;

        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(fstat(fd, &st));
        b = malloc((size_t) st.st_size + 1);
        ASSERT_TRUE(b);
        ASSERT_EQ(pread(fd, b, (size_t) st.st_size, 0), (ssize_t) st.st_size);
        *ret_n = (size_t) st.st_size;
        return b;
}

static bool exists(const char *path, const char *suffix) {
        char p[600];

        ASSERT_TRUE((size_t) snprintf(p, sizeof p, "%s%s", path, suffix) < sizeof p);
        return access(p, F_OK) >= 0;
}

/* A store of two boot sessions at path, closed (no WAL left). */
static void make_store(const char *path) {
        Db *db = NULL;

        ASSERT_OK(db_open(path, &db));
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_A, 1000, 3, 1, 2, 3));
        ASSERT_OK(ADD(db, "boot", PROFILE_BOOT, BOOT_B, 2000, 3, 2, 3, 4));
        db = db_free(db);
        ASSERT_TRUE(!exists(path, "-wal") && !exists(path, "-shm"));
}

/* Read-only, as the initramfs stage reads the store on a root mounted read-only: the file read and not
 * changed, no WAL or shm file made, a WAL left behind refused and not touched; names that an SQLite URI
 * would take apart, a relative path; what it refuses. */
TEST(readonly) {
        static const char *const names[] = { "ro.db", "a b?c#d%25e.db" };
        char path[300], dir[256];
        Db *db = NULL;

        for (size_t i = 0; i < ELEMENTSOF(names) + 1; i++) {
                _cleanup_free_ char *before = NULL, *after = NULL;
                DbProfileInfo *profiles = NULL;
                size_t n_before, n_after, n = 0;
                struct stat st1, st2;
                unsigned c_profiles, c_sessions, c_files;

                if (i < ELEMENTSOF(names))
                        (void) snprintf(path, sizeof path, "%s", tmp_path(names[i]));
                else    /* a path that begins with "//" (the URI's authority, if not escaped) */
                        (void) snprintf(path, sizeof path, "/%s", tmp_path("slashes.db"));
                make_store(path);
                before = file_bytes(path, &n_before);
                ASSERT_OK(stat(path, &st1));
                ASSERT_OK(db_open_readonly(path, &db));
                ASSERT_OK(db_counts(db, &c_profiles, &c_sessions, &c_files));
                ASSERT_EQ(c_profiles, 1u);
                ASSERT_EQ(c_sessions, 2u);
                ASSERT_OK(db_list_profiles(db, &profiles, &n));
                ASSERT_EQ(n, 1u);
                ASSERT_TRUE(streq(profiles[0].name, "boot"));
                db_profile_infos_free(profiles, n);
                ASSERT_TRUE(!exists(path, "-wal") && !exists(path, "-shm"));
                db = db_free(db);
                after = file_bytes(path, &n_after);
                ASSERT_OK(stat(path, &st2));
                ASSERT_EQ(n_after, n_before);
                ASSERT_TRUE(memcmp(before, after, n_before) == 0);
                ASSERT_TRUE(st1.st_mtim.tv_sec == st2.st_mtim.tv_sec && st1.st_mtim.tv_nsec == st2.st_mtim.tv_nsec);
                ASSERT_TRUE(!exists(path, "-wal") && !exists(path, "-shm"));
                fprintf(stderr, "   %s: read (1 profile, 2 sessions), unchanged, no WAL or shm\n", path);
        }

        /* a relative path */
        {
                char cwd[4096];

                ASSERT_TRUE(getcwd(cwd, sizeof cwd));
                ASSERT_OK(chdir(tmpdir));
                ASSERT_OK(db_open_readonly("ro.db", &db));
                db = db_free(db);
                ASSERT_OK(chdir(cwd));
                fprintf(stderr, "   ro.db (relative): read\n");
        }

        /* a WAL left behind (a daemon stopped without its checkpoint: copied while a connection holds it) */
        {
                const char *p = tmp_path("walled.db");
                char wal[300], copy_wal[300], cmd[1400];
                _cleanup_free_ char *before = NULL, *after = NULL;
                size_t n_before, n_after;
                unsigned c_profiles, c_sessions, c_files;
                Db *writer = NULL;

                make_store(p);
                ASSERT_OK(db_open(p, &writer));
                ASSERT_OK(ADD(writer, "/usr/bin/foo", PROFILE_APP, BOOT_A, 3000, 3, 5, 6));
                (void) snprintf(wal, sizeof wal, "%s-wal", p);
                ASSERT_TRUE(access(wal, F_OK) >= 0);
                (void) snprintf(dir, sizeof dir, "%s", tmp_path("copy.db"));
                (void) snprintf(copy_wal, sizeof copy_wal, "%s-wal", dir);
                ASSERT_TRUE((size_t) snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s' '%s'", p, dir, wal, copy_wal) <
                            sizeof cmd);
                ASSERT_EQ(system(cmd), 0);
                writer = db_free(writer);

                before = file_bytes(copy_wal, &n_before);
                ASSERT_ERROR(db_open_readonly(dir, &db), EUCLEAN);
                after = file_bytes(copy_wal, &n_after);
                ASSERT_EQ(n_after, n_before);
                ASSERT_TRUE(memcmp(before, after, n_before) == 0);
                ASSERT_TRUE(!exists(dir, "-shm"));
                /* an empty one (what a clean stop may leave) is no obstacle */
                ASSERT_OK(truncate(copy_wal, 0));
                ASSERT_OK(db_open_readonly(dir, &db));
                ASSERT_OK(db_counts(db, &c_profiles, &c_sessions, &c_files));
                ASSERT_EQ(c_profiles, 1u);
                db = db_free(db);
                fprintf(stderr, "   a WAL left behind: refused (EUCLEAN), unchanged, no shm; an empty one read past\n");
        }

        /* refused */
        {
                const char *p = tmp_path("ro-refused.db");
                char junk[8192];
                sqlite3 *s = NULL;
                char sql[64];

                ASSERT_ERROR(db_open_readonly(tmp_path("none.db"), &db), ENOENT);
                make_store(p);
                /* each written by a connection closed before (the last one checkpoints its WAL) */
                for (int d = 1; d >= -1; d -= 2) {
                        ASSERT_EQ(sqlite3_open_v2(p, &s, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
                        (void) snprintf(sql, sizeof sql, "PRAGMA user_version = %d", db_schema_version() + d);
                        ASSERT_EQ(sqlite3_exec(s, sql, NULL, NULL, NULL), SQLITE_OK);
                        ASSERT_EQ(sqlite3_close(s), SQLITE_OK);
                        if (d > 0)
                                ASSERT_ERROR(db_open_readonly(p, &db), EPROTO);
                }
                ASSERT_ERROR(db_open_readonly(p, &db), ESTALE);
                for (size_t i = 0; i < sizeof junk; i++)
                        junk[i] = (char) ('a' + i * 7 % 26);
                memcpy(junk, "SQLite format 3", 16);
                write_file(p, junk, sizeof junk);
                ASSERT_ERROR(db_open_readonly(p, &db), EBADMSG);
                ASSERT_TRUE(!db);
                fprintf(stderr, "   refused: ENOENT, EPROTO, ESTALE, EBADMSG\n");
        }
}

int main(int argc, char **argv) {
        if (argc == 3 && streq(argv[1], "--count-sessions")) {
                int n = count_sessions(argv[2]);
                return n < 0 ? 255 : MIN(n, 253);
        }
        test_db_tmpdir_make();

        RUN(kind_strings);
        RUN(migrations_idempotent);
        RUN(migration_from_3);
        RUN(migration_from_2);
        RUN(migration_from_4);
        RUN(migration_from_7);
        RUN(newer_version);
        RUN(foreign);
        RUN(corrupt);
        RUN(truncated);
        RUN(prefetch);
        RUN(second_connection);
        RUN(space);
        RUN(readonly);

        test_db_tmpdir_remove();
        return EXIT_SUCCESS;
}
