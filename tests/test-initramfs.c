/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The initramfs stage's decisions and its status file (initramfs-util.c, initramfs-status.c): the kernel
 * command line's switch, the superblock fields that allow or refuse the early pass, the status written and
 * read back. The superblocks are real ones: made by mkfs.ext4 and changed with debugfs/tune2fs where the
 * tools are there, else built by hand. */

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/macro.h"
#include "initramfs/initramfs-status.h"
#include "initramfs/initramfs-util.h"
#include "test-util.h"

static InitramfsMode mode(const char *cmdline, bool *force) {
        char bad[64];
        bool f;
        InitramfsMode m = initramfs_mode_from_cmdline(cmdline, &f, bad, sizeof bad);

        if (force)
                *force = f;
        return m;
}

TEST(cmdline) {
        char bad[64];
        bool force;

        ASSERT_EQ(mode("", &force), INITRAMFS_ON);
        ASSERT_TRUE(!force);
        ASSERT_EQ(mode("BOOT_IMAGE=/vmlinuz root=UUID=x ro quiet", &force), INITRAMFS_ON);
        ASSERT_EQ(mode("ro seekless.initramfs=no quiet", NULL), INITRAMFS_OFF);
        ASSERT_EQ(mode("ro seekless.initramfs=0", NULL), INITRAMFS_OFF);
        ASSERT_EQ(mode("seekless.initramfs=off\n", NULL), INITRAMFS_OFF);
        ASSERT_EQ(mode("seekless.initramfs=false", NULL), INITRAMFS_OFF);
        ASSERT_EQ(mode("seekless.initramfs=prefetch", NULL), INITRAMFS_PREFETCH_ONLY);
        /* the last one wins */
        ASSERT_EQ(mode("seekless.initramfs=no seekless.initramfs=yes", NULL), INITRAMFS_ON);
        ASSERT_EQ(mode("seekless.initramfs=yes\tseekless.initramfs=no", NULL), INITRAMFS_OFF);
        /* not the switch: a longer name, a prefix */
        ASSERT_EQ(mode("xseekless.initramfs=no seekless.initramfsx=no", NULL), INITRAMFS_ON);
        /* an unknown value changes nothing and is named */
        ASSERT_EQ(initramfs_mode_from_cmdline("seekless.initramfs=no seekless.initramfs=maybe", NULL, bad, sizeof bad),
                  INITRAMFS_OFF);
        ASSERT_TRUE(streq(bad, "seekless.initramfs=maybe"));
        ASSERT_EQ(mode("ro fsck.mode=force", &force), INITRAMFS_ON);
        ASSERT_TRUE(force);
        ASSERT_EQ(mode("forcefsck", &force), INITRAMFS_ON);
        ASSERT_TRUE(force);
        ASSERT_EQ(mode("fsck.mode=skip forcefsckx", &force), INITRAMFS_ON);
        ASSERT_TRUE(!force);
        printf("  the switch, its last word, unknown values, fsck.mode=force and forcefsck\n");
}

static void put16(uint8_t *b, size_t o, uint16_t v) {
        b[o] = (uint8_t) v;
        b[o + 1] = (uint8_t) (v >> 8);
}

static void put32(uint8_t *b, size_t o, uint32_t v) {
        for (unsigned i = 0; i < 4; i++)
                b[o + i] = (uint8_t) (v >> (8 * i));
}

/* A superblock as mkfs.ext4 makes it: clean, extents, no check by count or interval. */
static void clean_super(uint8_t *b) {
        memset(b, 0, EXT4_SUPER_SIZE);
        put16(b, 0x38, 0xEF53);
        put16(b, 0x3A, 1);
        put32(b, 0x60, 0x2c2);          /* filetype, extents, 64bit, flex_bg */
        put16(b, 0x36, (uint16_t) -1);
}

TEST(superblock_fields) {
        uint8_t b[EXT4_SUPER_SIZE];
        Ext4Super s;
        time_t now = 1700000000;

        clean_super(b);
        ASSERT_OK(ext4_super_parse(b, &s));
        ASSERT_TRUE(!ext4_super_unclean(&s, now));

        put16(b, 0x38, 0x1234);
        ASSERT_ERROR(ext4_super_parse(b, &s), EBADMSG);

#define REFUSED(change, what)                                                           \
        do {                                                                            \
                clean_super(b);                                                         \
                change;                                                                 \
                ASSERT_OK(ext4_super_parse(b, &s));                                     \
                ASSERT_TRUE(ext4_super_unclean(&s, now));                               \
                ASSERT_TRUE(strstr(ext4_super_unclean(&s, now), what));                 \
        } while (0)
        REFUSED(put32(b, 0x60, 0x2c2 | 0x4), "journal recovery");
        REFUSED(put16(b, 0x3A, 0), "not cleanly unmounted");
        REFUSED(put16(b, 0x3A, 1 | 2), "errors");
        REFUSED(put32(b, 0x194, 3), "errors");
        REFUSED(put32(b, 0x60, 0x2), "no extents");
        REFUSED(put32(b, 0x60, 0x2c2 | 0x8), "external journal");
        REFUSED((put16(b, 0x34, 20), put16(b, 0x36, 20)), "mount count");
        REFUSED((put32(b, 0x40, (uint32_t) (now - 100)), put32(b, 0x44, 50)), "check interval");
#undef REFUSED
        /* a count below its maximum, an interval not yet over, an unknown clock */
        clean_super(b);
        put16(b, 0x34, 19);
        put16(b, 0x36, 20);
        put32(b, 0x40, (uint32_t) (now - 100));
        put32(b, 0x44, 1000);
        ASSERT_OK(ext4_super_parse(b, &s));
        ASSERT_TRUE(!ext4_super_unclean(&s, now));
        put32(b, 0x44, 50);
        ASSERT_OK(ext4_super_parse(b, &s));
        ASSERT_TRUE(!ext4_super_unclean(&s, 0));
        printf("  clean; refused for recovery, state, errors, no extents, external journal, count, interval\n");
}

/* The same decisions on superblocks mkfs.ext4 and tune2fs wrote. */
TEST(superblock_real) {
        char dir[] = "/tmp/test-initramfs-XXXXXX", img[64], cmd[512];
        uint8_t b[EXT4_SUPER_SIZE];
        Ext4Super s;
        int fd;

        if (system("command -v mkfs.ext4 tune2fs >/dev/null") != 0) {
                printf("  skipped: no mkfs.ext4 or tune2fs\n");
                return;
        }
        ASSERT_TRUE(mkdtemp(dir));
        snprintf(img, sizeof img, "%s/fs.img", dir);
        snprintf(cmd, sizeof cmd, "mkfs.ext4 -q -F -b 4096 '%s' 32M", img);
        ASSERT_EQ(system(cmd), 0);

#define READ_SUPER()                                                                    \
        do {                                                                            \
                fd = open(img, O_RDONLY | O_CLOEXEC);                                   \
                ASSERT_TRUE(fd >= 0);                                                   \
                ASSERT_EQ(pread(fd, b, sizeof b, EXT4_SUPER_OFFSET), (ssize_t) sizeof b); \
                close(fd);                                                              \
                ASSERT_OK(ext4_super_parse(b, &s));                                     \
        } while (0)
        READ_SUPER();
        ASSERT_TRUE(!ext4_super_unclean(&s, time(NULL)));
        snprintf(cmd, sizeof cmd, "tune2fs -c 5 -C 5 '%s' >/dev/null", img);
        ASSERT_EQ(system(cmd), 0);
        READ_SUPER();
        ASSERT_TRUE(ext4_super_unclean(&s, time(NULL)) && strstr(ext4_super_unclean(&s, time(NULL)), "mount count"));
        snprintf(cmd, sizeof cmd, "tune2fs -c 5 -C 1 -E force_fsck '%s' >/dev/null 2>&1", img);
        ASSERT_EQ(system(cmd), 0);
        READ_SUPER();
        ASSERT_TRUE(ext4_super_unclean(&s, time(NULL)) && strstr(ext4_super_unclean(&s, time(NULL)), "errors"));
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        ASSERT_EQ(system(cmd), 0);
#undef READ_SUPER
        printf("  mkfs.ext4's superblock clean; tune2fs -C at -c: due; -E force_fsck: errors\n");
}

TEST(status) {
        InitramfsStatus s = {}, r;
        char buf[2048], path[] = "/tmp/test-initramfs-status-XXXXXX", file[64];
        int n;

        strcpy(s.outcome, "done");
        strcpy(s.summary, "read ahead 12.0 MiB\nINJECTED=1");   /* a newline cannot make a key */
        strcpy(s.early_outcome, "moved");
        strcpy(s.early_summary, "moved 3 of 4 queued file(s)");
        s.prefetch_bytes = 12582912;
        s.early_queued = 4;
        s.early_moved = 3;
        s.total_usec = UINT64_MAX;
        n = initramfs_status_format(&s, buf, sizeof buf);
        ASSERT_TRUE(n > 0);
        ASSERT_TRUE(!strstr(buf, "\nINJECTED"));
        ASSERT_OK(initramfs_status_parse(buf, (size_t) n, &r));
        ASSERT_TRUE(streq(r.outcome, "done"));
        ASSERT_TRUE(streq(r.summary, "read ahead 12.0 MiB INJECTED=1"));
        ASSERT_TRUE(streq(r.early_summary, "moved 3 of 4 queued file(s)"));
        ASSERT_EQ(r.prefetch_bytes, 12582912u);
        ASSERT_EQ(r.early_moved, 3u);
        ASSERT_EQ(r.total_usec, UINT64_MAX);
        ASSERT_ERROR(initramfs_status_format(&s, buf, 64), ENOBUFS);

        /* unknown keys and bad numbers are ignored; no OUTCOME is no status */
        static const char other[] = "NEW_KEY=1\nOUTCOME=skipped\nEARLY_MOVED=x\nSUMMARY=no database";
        ASSERT_OK(initramfs_status_parse(other, sizeof other - 1, &r));
        ASSERT_TRUE(streq(r.outcome, "skipped") && streq(r.summary, "no database") && r.early_moved == 0);
        ASSERT_ERROR(initramfs_status_parse("SUMMARY=x\n", 10, &r), EBADMSG);

        /* the file: its directory made, written whole */
        ASSERT_TRUE(mkdtemp(path));
        snprintf(file, sizeof file, "%s/seekless/initramfs.status", path);
        ASSERT_OK(initramfs_status_write(file, &s));
        ASSERT_OK(initramfs_status_read(file, &r));
        ASSERT_TRUE(streq(r.early_outcome, "moved") && r.early_queued == 4);
        ASSERT_OK(unlink(file));
        ASSERT_ERROR(initramfs_status_read(file, &r), ENOENT);
        snprintf(file, sizeof file, "%s/seekless", path);
        ASSERT_OK(rmdir(file));
        ASSERT_OK(rmdir(path));
        printf("  written and read back; a newline in a text stays in its line; unknown keys ignored\n");
}

int main(void) {
        RUN(cmdline);
        RUN(superblock_fields);
        RUN(superblock_real);
        RUN(status);
        return EXIT_SUCCESS;
}
