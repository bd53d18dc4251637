/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A session's way into its profile (profile.c) with real files: sessions recorded by the files' handles in a
 * scratch directory, stored in an SQLite database, merged; files deleted, renamed and left out on the way.
 * Needs CAP_DAC_READ_SEARCH (open_by_handle_at) and a filesystem with file handles; skips otherwise. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "store/db.h"
#include "fs/fid-util.h"
#include "common/macro.h"
#include "fs/mounts.h"
#include "profile/profile.h"
#include "fs/resident.h"
#include "record/session.h"
#include "test-scratch.h"
#include "test-util.h"

#define BOOT_ID "0123456789abcdef0123456789abcdef"
#define APP "/usr/bin/app"

static char dir[256];
static uint64_t dir_fsid;
static unsigned mount_opens, handle_opens;
static unsigned notes[_PROFILE_NOTE_MAX];
static char last_dropped[512];

static void cleanup(void) {
        char cmd[512];

        if (!dir[0])
                return;
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
                fprintf(stderr, "cleanup: %s failed\n", cmd);
        dir[0] = 0;
}

static int open_mount(uint64_t fsid, void *userdata) {
        int fd;

        if (fsid != dir_fsid)
                return -ENODEV;
        mount_opens++;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Every open by handle of the daemon's code (linked into this program, which defines the function), counted,
 * then made: the system call itself. */
int open_by_handle_at(int mount_fd, struct file_handle *handle, int flags) {
        handle_opens++;
        return (int) syscall(SYS_open_by_handle_at, mount_fd, handle, flags);
}

static void on_note(const ProfileNote *n, void *userdata) {
        ASSERT_TRUE(n->kind >= 0 && n->kind < _PROFILE_NOTE_MAX);
        notes[n->kind]++;
        if (n->kind == PROFILE_NOTE_DROPPED)
                snprintf(last_dropped, sizeof last_dropped, "%s", n->path);
}

static ProfileOptions options(void) {
        return (ProfileOptions) {
                .keep_boots = 3,
                .keep_launches = 3,
                .boot_id = BOOT_ID,
                .open_mount = open_mount,
                .note = on_note,
        };
}

static void make_file(const char *name, size_t size) {
        _cleanup_free_ char *data = malloc(size + 1);

        ASSERT_TRUE(data);
        memset(data, 'x', size);
        data[size] = 0;
        test_write_file(test_path(dir, name), data);
}

static FileKey key_of(const char *name) {
        _cleanup_close_ int fd = open(test_path(dir, name), O_RDONLY | O_CLOEXEC);
        FileKey k;

        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(file_key_from_fd(fd, &k));
        return k;
}

/* A session of profile that read the named files (NULL-terminated) in that order. */
static Session *session_of(ProfileKind kind, const char *profile, size_t max_files, const char *const *names) {
        Session *s = NULL;

        ASSERT_OK(session_new(kind, profile, 1000, 10 * USEC_PER_SEC, &s));
        s->uid = kind == PROFILE_BOOT ? 0 : 1000;
        s->max_files = max_files;
        for (size_t i = 0; names[i]; i++) {
                FileKey k = key_of(names[i]);
                ASSERT_OK(session_add(s, &k, 1000 + i));
        }
        return s;
}

/* Resolves and stores the session as the daemon does. Returns its id, 0 when it was not stored. */
static int64_t store(Db *db, Session *s, const ProfileOptions *o) {
        _cleanup_(profile_session_files_done) ProfileSessionFiles f = {};
        int64_t id = 0;
        int r;

        ASSERT_OK(profile_resolve_session(s, o, &f));
        r = profile_store_session(db, s, &f, 5000, o, &id);
        ASSERT_OK(r);
        ASSERT_TRUE(r == 0 || id > 0);
        return r > 0 ? id : 0;
}

/* Records, stores and merges one session of profile; returns the session's id. */
static int64_t record(Db *db, ProfileKind kind, const char *profile, const char *const *names) {
        _cleanup_(session_freep) Session *s = session_of(kind, profile, 0, names);
        ProfileOptions o = options();
        int64_t id = store(db, s, &o);

        ASSERT_TRUE(id > 0);
        ASSERT_OK(profile_merge(db, profile, kind, id, &o));
        return id;
}

/* The profile's files, by name in the scratch directory, joined with spaces: "b a c". */
static const char *profile_names(Db *db, const char *profile, bool refresh) {
        static char buf[1024];
        DbProfileFile *f = NULL;
        ProfileKind kind;
        ProfileOptions o = options();
        size_t n = 0, len = strlen(dir);

        ASSERT_OK(db_get_profile(db, profile, &kind, &f, &n));
        if (refresh)
                profile_refresh_paths(f, n, &o);
        buf[0] = 0;
        for (size_t i = 0; i < n; i++) {
                ASSERT_TRUE(strncmp(f[i].file.path, dir, len) == 0 && f[i].file.path[len] == '/');
                snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? " " : "",
                         f[i].file.path + len + 1);
        }
        db_profile_files_free(f, n);
        return buf;
}

static unsigned n_files_in_db(Db *db) {
        unsigned p, s, f;

        ASSERT_OK(db_counts(db, &p, &s, &f));
        return f;
}

#define NAMES(...) ((const char *const[]) { __VA_ARGS__, NULL })

TEST(merged_order) {
        _cleanup_(db_freep) Db *db = NULL;

        ASSERT_OK(db_open(":memory:", &db));
        make_file("a", 100);
        make_file("b", 200);
        make_file("c", 300);
        make_file("d", 400);
        /* rank.c's three-session scenario: the two older sessions agree on a before c, the newest does not. */
        record(db, PROFILE_APP, APP, NAMES("a", "b", "c", "d"));
        ASSERT_STREQ(profile_names(db, APP, false), "a b c d");
        record(db, PROFILE_APP, APP, NAMES("b", "a", "c", "d"));
        record(db, PROFILE_APP, APP, NAMES("b", "c", "a", "d"));
        ASSERT_STREQ(profile_names(db, APP, false), "b a c d");

        /* Sizes as they were when the session was stored. */
        DbProfileFile *f = NULL;
        ProfileKind kind;
        size_t n = 0;
        ASSERT_OK(db_get_profile(db, APP, &kind, &f, &n));
        ASSERT_EQ(kind, PROFILE_APP);
        ASSERT_EQ(n, 4);
        ASSERT_EQ(f[0].file.size, 200);
        ASSERT_EQ(f[0].seen, 3);
        db_profile_files_free(f, n);

        /* The boot profile is merged from its own sessions. */
        record(db, PROFILE_BOOT, "boot", NAMES("d", "a"));
        ASSERT_STREQ(profile_names(db, "boot", false), "d a");
        ASSERT_STREQ(profile_names(db, APP, false), "b a c d");
}

TEST(fresh_session_not_opened_again) {
        _cleanup_(db_freep) Db *db = NULL;
        _cleanup_(session_freep) Session *s = NULL;
        ProfileOptions o = options();
        int64_t id;

        ASSERT_OK(db_open(":memory:", &db));
        make_file("a", 100);
        make_file("b", 200);
        s = session_of(PROFILE_APP, APP, 0, NAMES("a", "b"));
        id = store(db, s, &o);
        ASSERT_TRUE(id > 0);
        /* Every file of the profile is in the session just stored: the merge opens nothing. */
        mount_opens = 0;
        ASSERT_OK(profile_merge(db, APP, PROFILE_APP, id, &o));
        ASSERT_EQ(mount_opens, 0);
        ASSERT_STREQ(profile_names(db, APP, false), "a b");
        /* Without a fresh session, it checks them. */
        ASSERT_OK(profile_merge(db, APP, PROFILE_APP, 0, &o));
        ASSERT_EQ(mount_opens, 1);
}

TEST(vanished_dropped) {
        _cleanup_(db_freep) Db *db = NULL;
        ProfileOptions o = options();

        ASSERT_OK(db_open(":memory:", &db));
        make_file("a", 100);
        make_file("b", 200);
        make_file("c", 300);
        record(db, PROFILE_APP, APP, NAMES("a", "b", "c"));
        ASSERT_EQ(n_files_in_db(db), 3);

        /* b goes; the next session does not read it, and its merge checks the older session's files. */
        ASSERT_EQ(unlink(test_path(dir, "b")), 0);
        memset(notes, 0, sizeof notes);
        record(db, PROFILE_APP, APP, NAMES("a", "c"));
        ASSERT_STREQ(profile_names(db, APP, false), "a c");
        ASSERT_EQ(n_files_in_db(db), 2);
        ASSERT_EQ(notes[PROFILE_NOTE_DROPPED], 1);
        ASSERT_STREQ(last_dropped, test_path(dir, "b"));
        ASSERT_EQ(notes[PROFILE_NOTE_DROP_FAILED], 0);

        /* Replaced by another file of the same name: the recorded one is gone just the same. */
        make_file("b", 200);
        record(db, PROFILE_APP, APP, NAMES("b", "c"));
        /* a and the new b both first (score 0), a by its lower file id */
        ASSERT_STREQ(profile_names(db, APP, false), "a b c");
        ASSERT_EQ(unlink(test_path(dir, "c")), 0);
        make_file("c", 300);
        ASSERT_OK(profile_merge(db, APP, PROFILE_APP, 0, &o));
        ASSERT_STREQ(profile_names(db, APP, false), "a b");
        ASSERT_EQ(n_files_in_db(db), 2);
}

TEST(renamed_updated) {
        _cleanup_(db_freep) Db *db = NULL;
        ProfileOptions o = options();

        ASSERT_OK(db_open(":memory:", &db));
        make_file("a", 100);
        make_file("b", 200);
        record(db, PROFILE_APP, APP, NAMES("a", "b"));
        ASSERT_EQ(rename(test_path(dir, "a"), test_path(dir, "a2")), 0);
        /* Shown under its new name at once, stored under it at the next merge. */
        ASSERT_STREQ(profile_names(db, APP, false), "a b");
        ASSERT_STREQ(profile_names(db, APP, true), "a2 b");
        ASSERT_OK(profile_merge(db, APP, PROFILE_APP, 0, &o));
        ASSERT_STREQ(profile_names(db, APP, false), "a2 b");

        /* Grown, then renamed again while a session that does not read it is stored: its merge learns it. */
        make_file("a2", 4096);
        ASSERT_EQ(rename(test_path(dir, "a2"), test_path(dir, "a3")), 0);
        record(db, PROFILE_APP, APP, NAMES("b"));
        ASSERT_STREQ(profile_names(db, APP, false), "a3 b");
        DbProfileFile *f = NULL;
        ProfileKind kind;
        size_t n = 0;
        ASSERT_OK(db_get_profile(db, APP, &kind, &f, &n));
        ASSERT_EQ(n, 2);
        ASSERT_EQ(f[0].file.size, 4096);
        db_profile_files_free(f, n);
}

TEST(min_launch_files) {
        _cleanup_(db_freep) Db *db = NULL;
        ProfileOptions o = options();
        ProfileKind kind;
        DbProfileFile *f = NULL;
        size_t n = 0;

        o.min_launch_files = 3;
        ASSERT_OK(db_open(":memory:", &db));
        make_file("a", 100);
        make_file("b", 200);
        make_file("c", 300);
        make_file("tmp", 10);
        {
                _cleanup_(session_freep) Session *s = session_of(PROFILE_APP, APP, 0, NAMES("a", "b"));
                ASSERT_EQ(store(db, s, &o), 0);
        }
        /* Three read, but one was a temporary file, gone by the end: two count. */
        {
                _cleanup_(session_freep) Session *s = session_of(PROFILE_APP, APP, 0, NAMES("a", "tmp", "b"));
                ASSERT_EQ(unlink(test_path(dir, "tmp")), 0);
                memset(notes, 0, sizeof notes);
                ASSERT_EQ(store(db, s, &o), 0);
                ASSERT_EQ(notes[PROFILE_NOTE_LEFT_OUT], 1);
        }
        ASSERT_ERROR(db_get_profile(db, APP, &kind, &f, &n), ENOENT);
        {
                _cleanup_(session_freep) Session *s = session_of(PROFILE_APP, APP, 0, NAMES("a", "b", "c"));
                ASSERT_TRUE(store(db, s, &o) > 0);
        }
        /* Not for the boot, which is stored with any file, but not with none. */
        make_file("tmp", 10);
        {
                _cleanup_(session_freep) Session *s = session_of(PROFILE_BOOT, "boot", 0, NAMES("tmp"));
                ASSERT_EQ(unlink(test_path(dir, "tmp")), 0);
                ASSERT_EQ(store(db, s, &o), 0);
        }
        ASSERT_ERROR(db_get_profile(db, "boot", &kind, &f, &n), ENOENT);
        {
                _cleanup_(session_freep) Session *s = session_of(PROFILE_BOOT, "boot", 0, NAMES("a"));
                ASSERT_TRUE(store(db, s, &o) > 0);
        }
}

TEST(max_session_files) {
        _cleanup_(db_freep) Db *db = NULL;
        _cleanup_(session_freep) Session *s = NULL;
        ProfileOptions o = options();
        DbSessionInfo *l = NULL;
        size_t n = 0;

        ASSERT_OK(db_open(":memory:", &db));
        make_file("a", 100);
        make_file("b", 200);
        make_file("c", 300);
        make_file("d", 400);
        s = session_of(PROFILE_APP, APP, 2, NAMES("a", "b", "c", "d"));
        ASSERT_EQ(s->n_files, 2);
        ASSERT_TRUE(s->full);
        ASSERT_TRUE(store(db, s, &o) > 0);
        ASSERT_OK(db_list_sessions(db, &l, &n));
        ASSERT_EQ(n, 1);
        ASSERT_EQ(l[0].n_files, 2);
        ASSERT_TRUE(!l[0].complete);
        ASSERT_STREQ(l[0].boot_id, BOOT_ID);
        ASSERT_EQ(l[0].uid, 1000);
        db_session_infos_free(l, n);
        ASSERT_OK(profile_merge(db, APP, PROFILE_APP, 0, &o));
        ASSERT_STREQ(profile_names(db, APP, false), "a b");
}

TEST(left_out) {
        _cleanup_(db_freep) Db *db = NULL;
        _cleanup_(session_freep) Session *s = NULL;
        ProfileOptions o = options();
        FileKey elsewhere, sub;

        ASSERT_OK(db_open(":memory:", &db));
        make_file("a", 100);
        make_file("b", 200);
        ASSERT_EQ(mkdir(test_path(dir, "sub"), 0755), 0);
        sub = key_of("sub");
        elsewhere = key_of("b");
        elsewhere.fsid ^= 1;   /* a filesystem that is not mounted */
        s = session_of(PROFILE_APP, APP, 0, NAMES("a"));
        ASSERT_OK(session_add(s, &sub, 2000));
        ASSERT_OK(session_add(s, &elsewhere, 3000));
        memset(notes, 0, sizeof notes);
        ASSERT_TRUE(store(db, s, &o) > 0);
        ASSERT_EQ(notes[PROFILE_NOTE_UNREACHABLE], 1);
        ASSERT_EQ(notes[PROFILE_NOTE_LEFT_OUT], 1);   /* the directory */
        ASSERT_OK(profile_merge(db, APP, PROFILE_APP, 0, &o));
        ASSERT_STREQ(profile_names(db, APP, false), "a");
}

/* A session's page ranges for the database: bytes, in first-touch order, indexed by the files kept; the
 * ranges of a file the resolution left out go with it. */
TEST(session_ranges) {
        _cleanup_(profile_session_files_done) ProfileSessionFiles f = {};
        _cleanup_(session_freep) Session *s = NULL;
        _cleanup_free_ DbSessionRange *r = NULL;
        ProfileOptions o = options();
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
        size_t n = 0;

        make_file("a", 100);
        make_file("c", 300);
        ASSERT_EQ(mkdir(test_path(dir, "sub"), 0755), 0);
        s = session_of(PROFILE_APP, APP, 0, NAMES("a", "sub", "c"));
        /* without page data: none */
        ASSERT_OK(profile_resolve_session(s, &o, &f));
        ASSERT_EQ(f.n, 2);
        ASSERT_EQ(f.index[0], 0);
        ASSERT_EQ(f.index[1], SIZE_MAX);
        ASSERT_EQ(f.index[2], 1);
        ASSERT_OK(session_add_pages(s, 2, 3, 2, 1500));
        ASSERT_OK(profile_session_ranges(s, &f, &r, &n));
        ASSERT_TRUE(!r && n == 0);

        s->pages = true;
        ASSERT_OK(session_add_pages(s, 1, 0, 1, 1600));         /* the directory: left out */
        ASSERT_OK(session_add_pages(s, 0, 0, 1, 1700));
        ASSERT_OK(profile_session_ranges(s, &f, &r, &n));
        ASSERT_EQ(n, 2);
        ASSERT_EQ(r[0].file, 1);
        ASSERT_EQ(r[0].offset, 3 * page);
        ASSERT_EQ(r[0].length, 2 * page);
        ASSERT_EQ(r[0].offset_usec, 500);
        ASSERT_EQ(r[1].file, 0);
        ASSERT_EQ(r[1].offset, 0);
        ASSERT_EQ(r[1].length, page);
        ASSERT_EQ(r[1].offset_usec, 700);

        /* the metadata, in bytes of the device, in first-touch order */
        _cleanup_free_ DbMetaRange *m = NULL;
        ASSERT_OK(profile_session_metadata(s, &m, &n));
        ASSERT_TRUE(!m && n == 0);
        ASSERT_EQ(session_add_metadata(s, 7, 100, 3, 1800), 1);
        ASSERT_EQ(session_add_metadata(s, 7, 10, 1, 1900), 1);
        ASSERT_OK(profile_session_metadata(s, &m, &n));
        ASSERT_EQ(n, 2);
        ASSERT_EQ(m[0].fsid, 7);
        ASSERT_EQ(m[0].offset, 100 * page);
        ASSERT_EQ(m[0].length, 3 * page);
        ASSERT_EQ(m[0].offset_usec, 800);
        ASSERT_EQ(m[1].offset, 10 * page);
        ASSERT_EQ(m[1].length, page);
}

/* Pages in the page cache: counted without walking a huge sparse file (cachestat), or walked within the
 * caller's budget (mincore, kernels before 6.5). */
TEST(resident_pages) {
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE), n = 0, budget = 0;
        const uint64_t size = UINT64_C(64) << 30;
        int fd, r;

        fd = open(test_path(dir, "sparse"), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(ftruncate(fd, (off_t) size) == 0);
        /* written, not read: a read of a hole inserts no page on tmpfs */
        ASSERT_TRUE(pwrite(fd, "x", 1, 0) == 1);
        ASSERT_TRUE(pwrite(fd, "x", 1, (off_t) (size / 2)) == 1);
        ASSERT_TRUE(pwrite(fd, "x", 1, (off_t) (size - page)) == 1);
        r = file_resident_pages(fd, size, &budget, &n);
        /* cachestat(2) with a bad fd: EBADF where the kernel has it */
        if (syscall(451, -1, NULL, NULL, 0) < 0 && errno == ENOSYS) {
                fprintf(stderr, "   no cachestat(2): 64 GiB not walked with no budget\n");
                ASSERT_ERROR(r, EFBIG);
        } else {
                ASSERT_OK(r);
                ASSERT_EQ(n, 3);
        }
        ASSERT_EQ(budget, 0);
        /* a small file: counted either way, the walk from the budget */
        ASSERT_TRUE(ftruncate(fd, (off_t) (10 * page)) == 0);
        ASSERT_TRUE(pwrite(fd, "x", 1, (off_t) (4 * page)) == 1);
        budget = 100;
        ASSERT_OK(file_resident_pages(fd, 10 * page, &budget, &n));
        ASSERT_EQ(n, 2);
        ASSERT_TRUE(budget == (r == -EFBIG ? 90 : 100));
        close(fd);
}

/* Each of a session's files is opened once when it is stored: by O_PATH, or for reading when the session
 * saw pages of it, for the checks and its residency both. A file more of which is cached than the session
 * saw read is warm (its ranges are not stored); one whose every cached page the session saw is not. */
TEST(resolve_opens_once) {
        _cleanup_(profile_session_files_done) ProfileSessionFiles f = {};
        _cleanup_(session_freep) Session *s = NULL;
        ProfileOptions o = options();
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);

        make_file("a", 100);
        make_file("w", 16 * page);
        make_file("v", 4 * page);
        s = session_of(PROFILE_APP, APP, 0, NAMES("a", "w", "v"));
        s->pages = true;
        ASSERT_OK(session_add_pages(s, 1, 0, 2, 1500));
        ASSERT_OK(session_add_pages(s, 2, 0, 4, 1600));
        handle_opens = 0;
        ASSERT_OK(profile_resolve_session(s, &o, &f));
        ASSERT_EQ(f.n, 3);
        ASSERT_EQ(handle_opens, 3);
        ASSERT_TRUE(!f.warm[0]);
        ASSERT_TRUE(f.warm[1]);
        ASSERT_TRUE(!f.warm[2]);
        ASSERT_EQ(f.n_warm, 1);
}

/* Each test in a directory of its own. */
typedef struct NamedRange {
        const char *name;
        uint64_t offset, length;
} NamedRange;

/* Stores a session that read the named files, with page data (the ranges, by file name; none: without),
 * as profile_store_session() does but with ranges, and merges the profile. */
static void record_ranges(Db *db, const char *const *names, const NamedRange *ranges, size_t n_ranges) {
        _cleanup_(session_freep) Session *s = session_of(PROFILE_APP, APP, 0, names);
        _cleanup_(profile_session_files_done) ProfileSessionFiles f = {};
        DbSessionRange r[16];
        ProfileOptions o = options();
        int64_t id;

        ASSERT_OK(profile_resolve_session(s, &o, &f));
        ASSERT_TRUE(n_ranges <= ELEMENTSOF(r));
        for (size_t i = 0; i < n_ranges; i++) {
                size_t k = 0;

                while (names[k] && !streq(names[k], ranges[i].name))
                        k++;
                ASSERT_TRUE(k < f.n);
                r[i] = (DbSessionRange) { .file = k, .offset = ranges[i].offset, .length = ranges[i].length,
                                          .offset_usec = i };
        }
        ASSERT_OK(db_add_session(db, &(DbSession) {
                        .profile = APP,
                        .kind = PROFILE_APP,
                        .boot_id = BOOT_ID,
                        .started_realtime_usec = 1000,
                        .duration_usec = 100,
                        .complete = true,
                        .uid = 1000,
                        .files = f.files,
                        .n_files = f.n,
                        .ranges = r,
                        .n_ranges = n_ranges,
                }, 3, &id));
        ASSERT_OK(profile_merge(db, APP, PROFILE_APP, id, &o));
}

/* The profile's ranges as "name:offset+length ...". */
static const char *profile_ranges(Db *db) {
        static char buf[1024];
        DbProfileFile *f = NULL;
        DbProfileRange *r = NULL;
        size_t n = 0, m = 0, len = strlen(dir);

        ASSERT_OK(db_get_profile(db, APP, NULL, &f, &n));
        ASSERT_OK(db_get_profile_ranges(db, APP, f, n, &r, &m));
        buf[0] = 0;
        for (size_t i = 0; i < m; i++)
                snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s:%llu+%llu", i ? " " : "",
                         f[r[i].file].file.path + len + 1, (unsigned long long) r[i].offset,
                         (unsigned long long) r[i].length);
        free(r);
        db_profile_files_free(f, n);
        fprintf(stderr, "   ranges: %s\n", buf);
        return buf;
}

/* Sessions with and without page data merged into ranges (rank.h), stored and read back; a file that
 * vanished takes its ranges out of the merge.
 *   sessions, newest first: S0 (a, b) a 0-4K; S1 (c, a) no page data; S2 (a, b, c) b 0-4K, a 8K-12K, b 4K-8K
 *   files: a 0, c 0, b 1 -> a c b (a and c tie: by id)
 *   S2 alone: b 0-4K, a 8K-12K, b 4K-8K, as read (b's two touch but a came between them), then c whole
 *   ranges: a 0-4K: 0; b 0-4K: 0; c (no page data read it): whole, its score 0; a 8K-12K: 1/2; b 4K-8K: 1 */
TEST(merged_ranges) {
        _cleanup_(db_freep) Db *db = NULL;
        ProfileOptions o = options();

        ASSERT_OK(db_open(":memory:", &db));
        make_file("a", 16384);
        make_file("b", 16384);
        make_file("c", 8192);
        record_ranges(db, NAMES("a", "b", "c"), (const NamedRange[]) {
                        { "b", 0, 4096 }, { "a", 8192, 4096 }, { "b", 4096, 4096 } }, 3);
        ASSERT_STREQ(profile_ranges(db), "b:0+4096 a:8192+4096 b:4096+4096 c:0+8192");
        record_ranges(db, NAMES("c", "a"), NULL, 0);
        record_ranges(db, NAMES("a", "b"), (const NamedRange[]) { { "a", 0, 4096 } }, 1);
        ASSERT_STREQ(profile_names(db, APP, false), "a c b");
        ASSERT_STREQ(profile_ranges(db), "a:0+4096 c:0+8192 b:0+4096 a:8192+4096 b:4096+4096");

        ASSERT_EQ(unlink(test_path(dir, "b")), 0);
        ASSERT_OK(profile_merge(db, APP, PROFILE_APP, 0, &o));
        /* without b's, a 8K-12K is S2's only range: position 0, like a 0-4K; a comes before c */
        ASSERT_STREQ(profile_ranges(db), "a:0+4096 a:8192+4096 c:0+8192");
}

/* A cold session of a and b (a 0-4K, b 8K-12K, metadata), stored as db_add_session() gets it. */
static void record_cold(Db *db, unsigned keep) {
        _cleanup_(session_freep) Session *s = session_of(PROFILE_APP, APP, 0, NAMES("a", "b"));
        _cleanup_(profile_session_files_done) ProfileSessionFiles f = {};
        const DbSessionRange r[] = { { .file = 0, .offset = 0, .length = 4096 },
                                     { .file = 1, .offset = 8192, .length = 4096, .offset_usec = 1 } };
        const DbMetaRange m[] = { { .fsid = 7, .offset = 409600, .length = 4096 } };
        ProfileOptions o = options();
        int64_t id;

        ASSERT_OK(profile_resolve_session(s, &o, &f));
        ASSERT_OK(db_add_session(db, &(DbSession) {
                        .profile = APP, .kind = PROFILE_APP, .boot_id = BOOT_ID, .started_realtime_usec = 1000,
                        .duration_usec = 100, .complete = true, .uid = 1000, .files = f.files, .n_files = f.n,
                        .ranges = r, .n_ranges = ELEMENTSOF(r), .meta = m, .n_meta = ELEMENTSOF(m),
                }, keep, &id));
        ASSERT_OK(profile_merge(db, APP, PROFILE_APP, id, &o));
}

static unsigned n_sessions(Db *db) {
        unsigned p, n, f;

        ASSERT_OK(db_counts(db, &p, &n, &f));
        return n;
}

/* A prefetched session (recorded without the pages it used: the tracepoint recorder) saw read only what the
 * prefetch missed: of a and b nothing, though they are cached (no warm rule), of a new file n its page. It
 * is stored as prefetched, without its metadata; the profile keeps its newest session that was not
 * prefetched besides KeepLaunches=1, and so its ranges of a and b and its metadata, not a and b whole. A
 * cold session later replaces that one. */
TEST(prefetched_keeps_cold) {
        _cleanup_(db_freep) Db *db = NULL;
        ProfileOptions o = options();
        DbMetaRange *m = NULL;
        size_t n = 0;

        ASSERT_OK(db_open(":memory:", &db));
        make_file("a", 16384);
        make_file("b", 16384);
        make_file("n", 8192);
        record_cold(db, 1);
        ASSERT_STREQ(profile_ranges(db), "a:0+4096 b:8192+4096");

        for (int k = 0; k < 3; k++) {
                _cleanup_(session_freep) Session *s = session_of(PROFILE_APP, APP, 0, NAMES("a", "b", "n"));
                int64_t id;

                s->pages = true;
                s->prefetched = true;
                ASSERT_OK(session_add_pages(s, 2, 0, 1, 1500));
                ASSERT_EQ(session_add_metadata(s, 7, 100, 1, 1600), 1);
                o.keep_launches = 1;
                id = store(db, s, &o);
                ASSERT_TRUE(id > 0);
                ASSERT_OK(profile_merge(db, APP, PROFILE_APP, id, &o));
                ASSERT_EQ(n_sessions(db), 2);
                ASSERT_STREQ(profile_names(db, APP, false), "a b n");
                ASSERT_STREQ(profile_ranges(db), "a:0+4096 b:8192+4096 n:0+4096");
                ASSERT_OK(db_get_profile_metadata(db, APP, &m, &n));
                ASSERT_EQ(n, 1);
                ASSERT_EQ(m[0].offset, 409600);
                m = mfree(m);
        }

        /* a cold session again: the one before goes (KeepLaunches=1), and with it the prefetched ones' */
        record_cold(db, 1);
        ASSERT_EQ(n_sessions(db), 1);
        ASSERT_STREQ(profile_ranges(db), "a:0+4096 b:8192+4096");
}

static void run_in_dir(void (*test)(void), const char *name) {
        char cmd[1024];

        fprintf(stderr, "-- %s\n", name);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'/* && mkdir -p '%s'", dir, dir);
        ASSERT_EQ(system(cmd), 0);
        test();
}
#define RUN_IN_DIR(name) run_in_dir(test_##name, #name)

int main(void) {
        _cleanup_close_ int fd = -EBADF, hfd = -EBADF;
        FileKey k;
        int r;

        snprintf(dir, sizeof dir, "%s/seekless-test-profile.XXXXXX", test_scratch_root());
        if (!mkdtemp(dir)) {
                fprintf(stderr, "mkdtemp %s: %m\n", dir);
                return EXIT_FAILURE;
        }
        atexit(cleanup);
        ASSERT_EQ(test_claim_dir(dir), 0);
        ASSERT_OK(fsid_of_path(dir, &dir_fsid));

        /* File handles: the filesystem must have them, and we must be allowed to open them. */
        make_file("probe", 1);
        fd = open(test_path(dir, "probe"), O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        r = file_key_from_fd(fd, &k);
        if (r < 0) {
                fprintf(stderr, "no file handles on %s (%s), skipping\n", dir, strerror(-r));
                return EXIT_TEST_SKIP;
        }
        hfd = open_mount(dir_fsid, NULL);
        ASSERT_TRUE(hfd >= 0);
        r = file_key_resolve(hfd, &k, NULL, NULL);
        if (r == -EPERM) {
                fprintf(stderr, "open_by_handle_at needs CAP_DAC_READ_SEARCH, skipping\n");
                return EXIT_TEST_SKIP;
        }
        ASSERT_OK(r);
        fprintf(stderr, "   in %s\n", dir);

        RUN_IN_DIR(merged_order);
        RUN_IN_DIR(fresh_session_not_opened_again);
        RUN_IN_DIR(vanished_dropped);
        RUN_IN_DIR(renamed_updated);
        RUN_IN_DIR(min_launch_files);
        RUN_IN_DIR(max_session_files);
        RUN_IN_DIR(left_out);
        RUN_IN_DIR(session_ranges);
        RUN_IN_DIR(resolve_opens_once);
        RUN_IN_DIR(merged_ranges);
        RUN_IN_DIR(prefetched_keeps_cold);
        RUN_IN_DIR(resident_pages);
        return EXIT_SUCCESS;
}
