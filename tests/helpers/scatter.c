/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Test program: age files that already exist, in place and safely on a live system, so that they end up
 * fragmented and scattered on disk while keeping their inode, contents and every open mapping valid.
 *   scatter FILLER_DIR SEED < PATHS      (one path per line; FILLER_DIR on the same ext4 filesystem)
 * For each file, in an order shuffled with SEED: an O_TMPFILE donor gets its blocks in small chunks, each
 * chunk followed by a filler chunk (fallocate, so allocation happens at once), and the file's data is then
 * swapped into the donor's blocks with EXT4_IOC_MOVE_EXT -- the same kernel call seeklessd uses, which is
 * safe for files other processes have open or mapped. Running executables (ETXTBSY) are left alone.
 * The fillers stay in FILLER_DIR/fill-SEED so the gaps remain. Prints one line per file ("scattered",
 * "skipped: REASON") and a summary; exits non-zero only on usage errors or if no file could be aged.
 * This is a tool for tests and benchmarks, not part of seekless. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

struct move_extent {
        uint32_t reserved;
        uint32_t donor_fd;
        uint64_t orig_start;
        uint64_t donor_start;
        uint64_t len;
        uint64_t moved_len;
};
#define EXT4_IOC_MOVE_EXT _IOWR('f', 15, struct move_extent)

#define BLOCK 4096ULL

static uint64_t rng;

static uint64_t next_rand(void) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
}

static int scatter_one(const char *path, const char *filler_dir, int filler, uint64_t *fill_off) {
        struct stat st;
        int fd, donor, r = 0;
        uint64_t blocks, off;

        fd = open(path, O_RDWR | O_CLOEXEC | O_NOATIME);
        if (fd < 0 && errno == EPERM)
                fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
                printf("%s: skipped: %s\n", path, strerror(errno));
                return 0;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
                printf("%s: skipped: not a non-empty regular file\n", path);
                close(fd);
                return 0;
        }
        blocks = ((uint64_t) st.st_size + BLOCK - 1) / BLOCK;
        /* the file's dirty data must be on disk before its blocks are swapped */
        if (fdatasync(fd) < 0) {
                printf("%s: skipped: fdatasync: %s\n", path, strerror(errno));
                close(fd);
                return 0;
        }
        donor = open(filler_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (donor < 0) {
                printf("%s: skipped: donor: %s\n", path, strerror(errno));
                close(fd);
                return 0;
        }
        for (off = 0; off < blocks && r == 0;) {
                uint64_t n = 1 + next_rand() % 8, gap = 1 + next_rand() % 16;

                if (n > blocks - off)
                        n = blocks - off;
                if (fallocate(donor, 0, (off_t) (off * BLOCK), (off_t) (n * BLOCK)) < 0 ||
                    fallocate(filler, 0, (off_t) *fill_off, (off_t) (gap * BLOCK)) < 0)
                        r = -errno;
                *fill_off += gap * BLOCK;
                off += n;
        }
        if (r == 0) {
                struct move_extent me = { .donor_fd = (uint32_t) donor, .len = blocks };

                while (me.orig_start < blocks) {
                        me.moved_len = 0;
                        if (ioctl(fd, EXT4_IOC_MOVE_EXT, &me) < 0 && errno != EINTR && errno != EBUSY) {
                                r = -errno;
                                break;
                        }
                        me.orig_start += me.moved_len;
                        me.donor_start += me.moved_len;
                        me.len = blocks - me.orig_start;
                }
        }
        if (r < 0)
                printf("%s: skipped: %s\n", path, strerror(-r));
        else
                printf("%s: scattered (%llu blocks)\n", path, (unsigned long long) blocks);
        close(donor);
        close(fd);
        return r < 0 ? 0 : 1;
}

int main(int argc, char **argv) {
        char **paths = NULL, line[4096], fill_path[4200];
        size_t n = 0, cap = 0, done = 0;
        uint64_t fill_off = 0;
        int filler;

        if (argc != 3) {
                fprintf(stderr, "usage: %s FILLER_DIR SEED < PATHS\n", argv[0]);
                return 2;
        }
        rng = strtoull(argv[2], NULL, 10) * 2654435761ULL + 1;
        snprintf(fill_path, sizeof fill_path, "%s/fill-%s", argv[1], argv[2]);
        filler = open(fill_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (filler < 0) {
                fprintf(stderr, "%s: %s\n", fill_path, strerror(errno));
                return 1;
        }
        fill_off = (uint64_t) lseek(filler, 0, SEEK_END);
        while (fgets(line, sizeof line, stdin)) {
                line[strcspn(line, "\n")] = 0;
                if (!line[0])
                        continue;
                if (n == cap) {
                        char **p = realloc(paths, (cap = cap ? cap * 2 : 64) * sizeof *p);
                        if (!p)
                                return 1;
                        paths = p;
                }
                if (!(paths[n++] = strdup(line)))
                        return 1;
        }
        for (size_t i = n; i > 1; i--) {        /* Fisher-Yates */
                size_t j = next_rand() % i;
                char *t = paths[i - 1];
                paths[i - 1] = paths[j];
                paths[j] = t;
        }
        for (size_t i = 0; i < n; i++) {
                done += (size_t) scatter_one(paths[i], argv[1], filler, &fill_off);
                free(paths[i]);
        }
        free(paths);
        fsync(filler);
        close(filler);
        printf("scatter: %zu of %zu files scattered\n", done, n);
        return n > 0 && done == 0 ? 1 : 0;
}
