/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Test program: reads files in ways fanotify's FAN_ACCESS does not see, one step after the other.
 *   page-touch STEP...
 * Steps:
 *   read:FILE                  open, read() to the end, close
 *   map:FILE                   open, mmap() the whole file, close the fd, touch every page (no read())
 *   random:FILE:FIRST:N        the same with MADV_RANDOM, touching pages FIRST..FIRST+N-1 only
 *   fadv:FILE:OFFSET:LENGTH    open, POSIX_FADV_RANDOM, pread() LENGTH bytes at OFFSET, close
 *   drop:FILE                  fdatasync and POSIX_FADV_DONTNEED: the file's pages leave the page cache
 *   cached:FILE                print how many of the file's pages are in the page cache (mincore() of a
 *                              read-only shared mapping: faults nothing in)
 *   missing:FILE               print which of them are not (mincore()), and the kernel's cachestat()
 *                              of the file: pages cached (read or not), evicted, recently evicted
 *   strided:FILE:N:STRIDE      one byte of each of N pages STRIDE pages apart, from the last (page
 *                              (N - 1) * STRIDE) down to page 0, with POSIX_FADV_RANDOM (one page each,
 *                              no readahead), dropping them every 4096 reads (POSIX_FADV_DONTNEED): N page
 *                              insertions, in a few MiB of page cache (of a sparse file, pages of a hole)
 *   lock:FILE:OFFSET:LENGTH    mmap() that part, MADV_RANDOM, mlock(): its pages are read if they are not
 *                              cached (those pages only) and stay cached, whatever drops caches, until exit
 *   write:FILE:LENGTH          create FILE (it must not exist) and write LENGTH bytes to it
 *   sleep:MS                   pause
 *   thread:STEP                run STEP (with its colons) in a new thread, wait for it to end
 * Exits non-zero on any failure. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what, const char *file) {
        fprintf(stderr, "page-touch: %s %s: %m\n", what, file);
        return 1;
}

static int touch(const char *file, int advice, unsigned long first, unsigned long n) {
        long page = sysconf(_SC_PAGESIZE);
        volatile const char *p;
        unsigned long sum = 0;
        struct stat st;
        int fd = open(file, O_RDONLY | O_CLOEXEC);

        if (fd < 0 || fstat(fd, &st) < 0)
                return fail("open", file);
        p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
                return fail("mmap", file);
        /* closed before the faults, as ld.so does with the libraries it maps */
        close(fd);
        if (advice >= 0 && madvise((void *) p, st.st_size, advice) < 0)
                return fail("madvise", file);
        if (n == 0)
                n = (st.st_size + page - 1) / page - first;
        for (unsigned long i = first; i < first + n && (off_t) (i * page) < st.st_size; i++)
                sum += p[i * page];
        munmap((void *) p, st.st_size);
        return sum == 0xdeadbeef;      /* keeps the reads */
}

static int step(char *s);

static void *thread_step(void *userdata) {
        return (void *) (intptr_t) step(userdata);
}

static int step(char *s) {
        char *kind, *file, *a, *b, *save = NULL;
        char buf[65536];
        int fd;

        if (strncmp(s, "thread:", 7) == 0) {
                pthread_t t;
                void *ret;

                if (pthread_create(&t, NULL, thread_step, s + 7) != 0 || pthread_join(t, &ret) != 0)
                        return fail("thread", s);
                return (int) (intptr_t) ret;
        }
        kind = strtok_r(s, ":", &save);
        file = strtok_r(NULL, ":", &save);
        a = strtok_r(NULL, ":", &save);
        b = strtok_r(NULL, ":", &save);

        if (!kind || !file)
                return fail("bad step", s);
        if (strcmp(kind, "sleep") == 0) {
                long ms = strtol(file, NULL, 10);
                return nanosleep(&(struct timespec) { ms / 1000, (ms % 1000) * 1000000L }, NULL) < 0;
        }
        if (strcmp(kind, "read") == 0) {
                ssize_t k;
                fd = open(file, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return fail("open", file);
                while ((k = read(fd, buf, sizeof buf)) > 0)
                        ;
                close(fd);
                return k < 0 ? fail("read", file) : 0;
        }
        if (strcmp(kind, "map") == 0)
                return touch(file, -1, 0, 0);
        if (strcmp(kind, "random") == 0 && a && b)
                return touch(file, MADV_RANDOM, strtoul(a, NULL, 0), strtoul(b, NULL, 0));
        if (strcmp(kind, "fadv") == 0 && a && b) {
                size_t len = strtoul(b, NULL, 0);
                char *m = malloc(len);
                ssize_t k;

                fd = open(file, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || !m)
                        return fail("open", file);
                if (posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) != 0)
                        return fail("fadvise", file);
                k = pread(fd, m, len, strtol(a, NULL, 0));
                close(fd);
                free(m);
                return k != (ssize_t) len ? fail("pread", file) : 0;
        }
        if (strcmp(kind, "write") == 0 && a) {
                size_t left = strtoul(a, NULL, 0);

                fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                if (fd < 0)
                        return fail("create", file);
                memset(buf, 'w', sizeof buf);
                while (left > 0) {
                        ssize_t k = write(fd, buf, left < sizeof buf ? left : sizeof buf);
                        if (k <= 0)
                                return fail("write", file);
                        left -= (size_t) k;
                }
                close(fd);
                return 0;
        }
        if (strcmp(kind, "strided") == 0 && a && b) {
                unsigned long n = strtoul(a, NULL, 0), stride = strtoul(b, NULL, 0);
                long page = sysconf(_SC_PAGESIZE);
                char c;

                fd = open(file, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return fail("open", file);
                if (posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) != 0)
                        return fail("fadvise", file);
                for (unsigned long i = n, dropped = n; i > 0; i--) {
                        off_t at = (off_t) ((i - 1) * stride) * page;

                        if (pread(fd, &c, 1, at) != 1)
                                return fail("pread", file);
                        /* the pages read since the last drop */
                        if ((i % 4096 == 1 || i == 1) &&
                            posix_fadvise(fd, at, (off_t) ((dropped - i) * stride + 1) * page, POSIX_FADV_DONTNEED) != 0)
                                return fail("drop", file);
                        if (i % 4096 == 1)
                                dropped = i - 1;
                }
                close(fd);
                return 0;
        }
        if (strcmp(kind, "lock") == 0 && a && b) {
                size_t len = strtoul(b, NULL, 0);
                void *p;

                fd = open(file, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return fail("open", file);
                p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, strtol(a, NULL, 0));
                close(fd);
                /* by syscall(): AddressSanitizer's mlock() does nothing (its interceptor ignores it) */
                if (p == MAP_FAILED || madvise(p, len, MADV_RANDOM) < 0 || syscall(SYS_mlock, p, len) < 0)
                        return fail("lock", file);
                return 0;      /* mapped and locked until the process exits */
        }
        if (strcmp(kind, "drop") == 0) {
                fd = open(file, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || fdatasync(fd) < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
                        return fail("drop", file);
                close(fd);
                return 0;
        }
        if (strcmp(kind, "missing") == 0) {
                long page = sysconf(_SC_PAGESIZE);
                struct { uint64_t off, len; } range = { 0, 0 };
                struct { uint64_t cache, dirty, writeback, evicted, recently_evicted; } cs = {};
                unsigned long n;
                unsigned char *vec;
                struct stat st;
                void *p = NULL;

                fd = open(file, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0)
                        return fail("open", file);
                n = ((unsigned long) st.st_size + (unsigned long) page - 1) / (unsigned long) page;
                if (syscall(451 /* cachestat */, fd, &range, &cs, 0) < 0)
                        return fail("cachestat", file);
                printf("%s: %lu pages; cachestat: %llu cached, %llu evicted, %llu recently evicted; not in mincore():",
                       file, n, (unsigned long long) cs.cache, (unsigned long long) cs.evicted,
                       (unsigned long long) cs.recently_evicted);
                vec = malloc(n + 1);
                if (n > 0)
                        p = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
                close(fd);
                if (!vec || p == MAP_FAILED || (n > 0 && mincore(p, (size_t) st.st_size, vec) < 0))
                        return fail("mincore", file);
                for (unsigned long i = 0; i < n; i++)
                        if (!(vec[i] & 1))
                                printf(" %lu", i);
                printf("\n");
                free(vec);
                if (n > 0)
                        munmap(p, (size_t) st.st_size);
                return 0;
        }
        if (strcmp(kind, "cached") == 0) {
                long page = sysconf(_SC_PAGESIZE);
                unsigned long n, count = 0;
                unsigned char *vec;
                struct stat st;
                void *p;

                fd = open(file, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0)
                        return fail("open", file);
                n = ((unsigned long) st.st_size + (unsigned long) page - 1) / (unsigned long) page;
                if (n == 0) {
                        close(fd);
                        printf("0\n");
                        return 0;
                }
                p = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
                close(fd);
                vec = malloc(n);
                if (p == MAP_FAILED || !vec || mincore(p, (size_t) st.st_size, vec) < 0)
                        return fail("mincore", file);
                for (unsigned long i = 0; i < n; i++)
                        count += vec[i] & 1;
                free(vec);
                munmap(p, (size_t) st.st_size);
                printf("%lu\n", count);
                return 0;
        }
        return fail("unknown step", kind);
}

int main(int argc, char **argv) {
        for (int i = 1; i < argc; i++)
                if (step(argv[i]) != 0)
                        return 1;
        return 0;
}
