/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The reader of the boot collector's keys file (boot-collect.c): line syntax, whole-file checks, the
 * watched-filesystem filter, removal after reading. The writer is the real collector, tested end to end by
 * test-boot-collector.sh. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/boot-collect.h"
#include "fs/fid-util.h"
#include "test-util.h"

static void write_keys(const char *dir, const char *text) {
        char path[PATH_MAX];
        FILE *f;

        snprintf(path, sizeof path, "%s/" BOOT_COLLECT_KEYS_FILE, dir);
        f = fopen(path, "we");
        ASSERT_TRUE(f);
        fputs(text, f);
        ASSERT_TRUE(fclose(f) == 0);
}

static bool keys_exist(const char *dir) {
        char path[PATH_MAX];

        snprintf(path, sizeof path, "%s/" BOOT_COLLECT_KEYS_FILE, dir);
        return access(path, F_OK) == 0;
}

TEST(parse_line) {
        FileKey k;

        ASSERT_OK(boot_collect_parse_line("0c460842ee40f6d2 1 0e0000009681878b\n", &k, NULL));
        ASSERT_EQ(k.fsid, 0x0c460842ee40f6d2ULL);
        ASSERT_EQ(k.handle_type, 1);
        ASSERT_EQ(k.handle_len, 8);
        ASSERT_EQ(k.handle[0], 0x0e);
        ASSERT_EQ(k.handle[7], 0x8b);
        ASSERT_ERROR(boot_collect_parse_line("0c460842ee40f6d2 1 0e00000\n", &k, NULL), EBADMSG);       /* odd */
        ASSERT_ERROR(boot_collect_parse_line("0c460842ee40f6d2 1 0E0000009681878B\n", &k, NULL), EBADMSG);
        ASSERT_ERROR(boot_collect_parse_line("0c460842ee40f6d2 1\n", &k, NULL), EBADMSG);
        ASSERT_ERROR(boot_collect_parse_line("zz 1 00\n", &k, NULL), EBADMSG);
        ASSERT_ERROR(boot_collect_parse_line("1 1 00112233445566778899aabbccddeeff00112233445566778899\n", &k, NULL),
                     EBADMSG);       /* longer than FID_HANDLE_MAX */
        ASSERT_ERROR(boot_collect_parse_line("1 1 0011 22\n", &k, NULL), EBADMSG);        /* relative path */

        /* paths: the rest of the line, escapes undone; a round trip through the writer's escaping */
        const char *odd = "/a dir/with\\backslash\nand newline";
        char *e = boot_collect_escape_path(odd), line[256], *p = NULL;
        ASSERT_TRUE(e);
        ASSERT_TRUE(strchr(e, '\n') == NULL);
        snprintf(line, sizeof line, "0000000000000001 1 0011 %s\n", e);
        ASSERT_OK(boot_collect_parse_line(line, &k, &p));
        ASSERT_EQ(k.handle_len, 2);
        ASSERT_TRUE(p && streq(p, odd));
        free(p);
        free(e);
        ASSERT_ERROR(boot_collect_parse_line("1 1 0011 /bad\\escape\n", &k, &p), EBADMSG);
        ASSERT_ERROR(boot_collect_parse_line("1 1 0011 /trailing\\\n", &k, &p), EBADMSG);
}

TEST(take) {
        char dir[] = "/tmp/test-boot-collect.XXXXXX";
        Filesystem fs = { .fsid = 0x1111 };
        FilesystemList watched = { .items = &fs, .n = 1 };
        Session *s = NULL;

        ASSERT_TRUE(mkdtemp(dir));
        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        /* no file: nothing, no error */
        ASSERT_EQ(boot_collect_take(dir, s, &watched, 1), 0);
        /* order kept, duplicates and other filesystems left out, file removed */
        write_keys(dir, BOOT_COLLECT_MAGIC
                   "0000000000001111 1 0300000001000000\n"
                   "0000000000002222 1 0100000001000000\n"
                   "0000000000001111 1 0100000001000000\n"
                   "0000000000001111 1 0300000001000000\n"
                   "end 4\n");
        ASSERT_EQ(boot_collect_take(dir, s, &watched, 1), 2);
        ASSERT_EQ(s->n_files, 2);
        ASSERT_EQ(s->files[0].key.handle[0], 3);
        ASSERT_EQ(s->files[1].key.handle[0], 1);
        ASSERT_TRUE(!keys_exist(dir));
        /* incomplete files add nothing, and are removed */
        const char *bad[] = {
                BOOT_COLLECT_MAGIC "0000000000001111 1 0500000001000000\n",                 /* no end */
                BOOT_COLLECT_MAGIC "0000000000001111 1 0500000001000000\nend 2\n",          /* count */
                "seekless-boot-collector 2\n0000000000001111 1 0500000001000000\nend 1\n", /* version */
                BOOT_COLLECT_MAGIC "0000000000001111 1 05000000010000\nbroken\nend 2\n",
                BOOT_COLLECT_MAGIC "0000000000001111 1 0500000001000000\nend 1\nextra\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                write_keys(dir, bad[i]);
                ASSERT_ERROR(boot_collect_take(dir, s, &watched, 1), EBADMSG);
                ASSERT_EQ(s->n_files, 2);
                ASSERT_TRUE(!keys_exist(dir));
        }
        session_free(s);

        /* a path is kept only if it still names the file of the key */
        char a[PATH_MAX], b[PATH_MAX], text[4 * PATH_MAX];
        FileKey ka, kb;
        int fd;
        snprintf(a, sizeof a, "%s/a", dir);
        snprintf(b, sizeof b, "%s/b", dir);
        fd = open(a, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0 && file_key_from_fd(fd, &ka) >= 0);
        close(fd);
        fd = open(b, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0 && file_key_from_fd(fd, &kb) >= 0);
        close(fd);
        fs.fsid = ka.fsid;
        char ha[2 * FID_HANDLE_MAX + 1] = "", hb[2 * FID_HANDLE_MAX + 1] = "";
        for (uint32_t i = 0; i < ka.handle_len; i++)
                sprintf(ha + 2 * i, "%02x", ka.handle[i]);
        for (uint32_t i = 0; i < kb.handle_len; i++)
                sprintf(hb + 2 * i, "%02x", kb.handle[i]);
        /* b's line carries a's path: a path that names another file is dropped */
        snprintf(text, sizeof text, BOOT_COLLECT_MAGIC "%016" PRIx64 " %d %s %s\n%016" PRIx64 " %d %s %s\nend 2\n",
                 ka.fsid, ka.handle_type, ha, a, kb.fsid, kb.handle_type, hb, a);
        write_keys(dir, text);
        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        ASSERT_EQ(boot_collect_take(dir, s, &watched, 1), 2);
        _cleanup_free_ char *named = session_path(s, 0);
        ASSERT_TRUE(named && streq(named, a));
        ASSERT_TRUE(session_path(s, 1) == NULL);
        session_free(s);
        ASSERT_TRUE(unlink(a) == 0 && unlink(b) == 0);

        /* no collector: stopping is a no-op; a pid file naming another process gets no signal */
        ASSERT_EQ(boot_collect_stop(dir, USEC_PER_SEC), 0);
        char pidfile[PATH_MAX];
        snprintf(pidfile, sizeof pidfile, "%s/" BOOT_COLLECT_PID_FILE, dir);
        FILE *f = fopen(pidfile, "we");
        ASSERT_TRUE(f);
        fprintf(f, "%i\n", (int) getpid());
        fclose(f);
        ASSERT_EQ(boot_collect_stop(dir, USEC_PER_SEC), 0);
        ASSERT_TRUE(unlink(pidfile) == 0);
        ASSERT_TRUE(rmdir(dir) == 0);
}

TEST(exclude) {
        char dir[] = "/tmp/test-boot-collect.XXXXXX", path[PATH_MAX], line[32];
        int fd;

        ASSERT_TRUE(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/" BOOT_COLLECT_EXCLUDE_FILE, dir);
        /* no collector (no file): nothing listed, no file created */
        ASSERT_EQ(boot_collect_exclude_self(dir), 0);
        ASSERT_TRUE(access(path, F_OK) < 0 && errno == ENOENT);
        /* the collector's file: our pid appended after what is there */
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(write(fd, "1\n12\n", 5) == 5);
        ASSERT_TRUE(!boot_collect_pid_listed(fd, getpid()));
        ASSERT_EQ(boot_collect_exclude_self(dir), 1);
        ASSERT_TRUE(boot_collect_pid_listed(fd, getpid()));
        ASSERT_TRUE(boot_collect_pid_listed(fd, 12) && boot_collect_pid_listed(fd, 1));
        ASSERT_TRUE(!boot_collect_pid_listed(fd, 2) && !boot_collect_pid_listed(fd, 123));
        /* a line not yet complete does not count; past the first 4 KiB read, lines still count */
        ASSERT_TRUE(ftruncate(fd, 0) == 0);
        ASSERT_TRUE(pwrite(fd, "77", 2, 0) == 2);
        ASSERT_TRUE(!boot_collect_pid_listed(fd, 77));
        ASSERT_TRUE(ftruncate(fd, 0) == 0);
        for (int i = 0; i < 1000; i++) {
                int n = snprintf(line, sizeof line, "%i\n", 100000 + i);
                ASSERT_TRUE(pwrite(fd, line, (size_t) n, (off_t) i * n) == n);
        }
        ASSERT_TRUE(boot_collect_pid_listed(fd, 100000) && boot_collect_pid_listed(fd, 100999));
        ASSERT_TRUE(boot_collect_pid_listed(fd, 100682));
        ASSERT_TRUE(!boot_collect_pid_listed(fd, 101000) && !boot_collect_pid_listed(fd, 10000));
        close(fd);
        ASSERT_TRUE(unlink(path) == 0);
        ASSERT_TRUE(rmdir(dir) == 0);
}

int main(void) {
        RUN(parse_line);
        RUN(take);
        RUN(exclude);
        return 0;
}
