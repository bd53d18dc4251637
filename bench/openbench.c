/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * openbench: open+read+close throughput of many small files, one process.
 *
 *   openbench DIR N_FILES SECONDS   pre-read DIR/f000000 .. DIR/f<N_FILES-1> (hot cache), then cycle
 *                                   open/read/close over them for SECONDS; prints "<ops> ops/s"
 *   openbench DIR N_FILES 0         read every file exactly once (no warm-up); prints the same line
 *   openbench --once DIR N_FILES    the same, spelled out: ONE timed pass, each file opened, read to EOF
 *                                   and closed exactly once, no warm-up; prints "<ops> ops/s" of that
 *                                   pass. With the page cache hot this is the cost of a first read
 *                                   (what a boot mostly does) when the files are new to the observer.
 *   openbench --create DIR N_FILES MIN MAX
 *                                   create the files, sizes spread evenly over MIN..MAX bytes
 *   openbench --drop DIR N_FILES    drop the files' pages from the page cache (POSIX_FADV_DONTNEED per
 *                                   file; the files must be clean), then count with mincore() how many
 *                                   are still resident; prints "<files> files, <pages> pages resident"
 *   openbench --resident DIR N_FILES
 *                                   only count the resident pages (mincore), same output
 *
 *   openbench --hook MOUNT DIR N_FILES CYCLES SLICE
 *                                   the kernel's cost of the one mark an idle seeklessd holds: CYCLES
 *                                   cycles of two SLICE-second slices of the hot open/read/close loop,
 *                                   one with no mark, one while this process holds a fanotify group
 *                                   (FAN_CLASS_CONTENT) with a FAN_OPEN_EXEC_PERM mark on MOUNT's
 *                                   filesystem (no exec happens, so it gets no event), their order
 *                                   alternating; prints the median and quartiles of the per-cycle
 *                                   ratios marked/unmarked, and the two throughputs overall. Side by
 *                                   side in one process, a few ms apart: what the machine's load does to
 *                                   one slice it mostly does to the other.
 *
 *   --mmap before DIR or --once: map each file instead of reading it: open, fstat (for the size), mmap
 *   PROT_READ MAP_SHARED, close the fd, read one byte of every page (faults), munmap. What ld.so does
 *   with a library, and what fanotify's FAN_ACCESS does not see.
 *
 * Files are opened relative to a directory fd (one path component per lookup). No stdio per
 * operation; the clock is read every 256 operations.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NAME_LEN 8   /* "f" + 6 digits + NUL */
#define READ_BUF (64 * 1024)

static char buf[READ_BUF];
static int use_mmap;
static volatile unsigned char sink;
static long page_size;

static double now_sec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void name_of(char *out, unsigned long i) {
        /* f%06lu without snprintf (only used outside the timed loop anyway) */
        out[0] = 'f';
        for (int d = 6; d >= 1; d--) {
                out[d] = (char) ('0' + i % 10);
                i /= 10;
        }
        out[7] = '\0';
}

static int die(const char *what, const char *name) {
        fprintf(stderr, "openbench: %s %s: %s\n", what, name ? name : "", strerror(errno));
        return 1;
}

/* one open/read-to-EOF/close; returns 0 or -1 */
static inline int one(int dfd, const char *name) {
        int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        ssize_t n;

        if (fd < 0)
                return -1;
        do
                n = read(fd, buf, sizeof buf);
        while (n == (ssize_t) sizeof buf);
        close(fd);
        return n < 0 ? -1 : 0;
}

/* one open/fstat/mmap/close/touch every page/munmap; returns 0 or -1 */
static inline int one_mapped(int dfd, const char *name) {
        int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        unsigned char sum = 0;
        struct stat st;
        void *p;

        if (fd < 0)
                return -1;
        if (fstat(fd, &st) < 0) {
                close(fd);
                return -1;
        }
        if (st.st_size == 0) {
                close(fd);
                return 0;
        }
        p = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        if (p == MAP_FAILED)
                return -1;
        for (off_t o = 0; o < st.st_size; o += page_size)
                sum += ((const volatile unsigned char *) p)[o];
        sink = sum;
        return munmap(p, (size_t) st.st_size);
}

static inline int one_file(int dfd, const char *name) {
        return use_mmap ? one_mapped(dfd, name) : one(dfd, name);
}

static int drop(const char *dir, unsigned long nfiles, int advise) {
        unsigned long resident = 0;
        unsigned char vec[READ_BUF / 4096 + 16];
        char name[NAME_LEN];
        int dfd;

        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return die("cannot open", dir);
        for (unsigned long i = 0; i < nfiles; i++) {
                struct stat st;
                int fd, r;

                name_of(name, i);
                fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0)
                        return die("cannot open", name);
                r = advise ? posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) : 0;
                if (r != 0) {
                        errno = r;
                        return die("posix_fadvise", name);
                }
                if (st.st_size > 0 && st.st_size <= READ_BUF) {
                        size_t np = ((size_t) st.st_size + page_size - 1) / page_size;
                        void *p = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);

                        if (p == MAP_FAILED)
                                return die("cannot map", name);
                        if (mincore(p, (size_t) st.st_size, vec) < 0)
                                return die("mincore", name);
                        for (size_t k = 0; k < np; k++)
                                resident += vec[k] & 1;
                        munmap(p, (size_t) st.st_size);
                }
                close(fd);
        }
        close(dfd);
        printf("%lu files, %lu pages resident\n", nfiles, resident);
        return 0;
}

static int create(const char *dir, unsigned long nfiles, unsigned long min, unsigned long max) {
        char name[NAME_LEN];
        int dfd;

        if (max < min || max > READ_BUF || min == 0) {
                fprintf(stderr, "openbench: need 0 < MIN <= MAX <= %d\n", READ_BUF);
                return 2;
        }
        memset(buf, 'x', sizeof buf);
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return die("cannot open", dir);
        for (unsigned long i = 0; i < nfiles; i++) {
                size_t size = min + (size_t) ((max - min + 1) * i / (nfiles ? nfiles : 1));
                int fd;

                name_of(name, i);
                fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0)
                        return die("cannot create", name);
                if (write(fd, buf, size) != (ssize_t) size)
                        return die("cannot write", name);
                close(fd);
        }
        close(dfd);
        return 0;
}

/* The names f000000 .. of nfiles files, and DIR opened: 0, or 1 after telling why not. */
static int open_files(const char *dir, unsigned long nfiles, char (**ret_names)[NAME_LEN], int *ret_dfd) {
        char (*names)[NAME_LEN] = malloc(nfiles * sizeof *names);

        if (!names)
                return die("out of memory", NULL);
        for (unsigned long i = 0; i < nfiles; i++)
                name_of(names[i], i);
        *ret_dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (*ret_dfd < 0)
                return die("cannot open", dir);
        *ret_names = names;
        return 0;
}

/* ops/s of the hot loop over names for `seconds`, starting at *next (carried over between slices) */
static double slice_rate(int dfd, char (*names)[NAME_LEN], unsigned long nfiles, unsigned long *next,
                         double seconds) {
        unsigned long ops = 0, i = *next;
        double t0 = now_sec(), t;

        do {
                for (int k = 0; k < 256; k++) {
                        if (one_file(dfd, names[i]) < 0)
                                exit(die("cannot read", names[i]));
                        i = i + 1 == nfiles ? 0 : i + 1;
                }
                ops += 256;
                t = now_sec();
        } while (t - t0 < seconds);
        *next = i;
        return (double) ops / (t - t0);
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

static int hook_cost(const char *mount, const char *dir, unsigned long nfiles, unsigned cycles, double slice) {
        double *ratio = calloc(cycles, sizeof *ratio), sum[2] = { 0, 0 };
        char (*names)[NAME_LEN];
        unsigned long next = 0;
        int dfd;

        if (!ratio)
                return die("out of memory", NULL);
        if (open_files(dir, nfiles, &names, &dfd) != 0)
                return 1;
        (void) slice_rate(dfd, names, nfiles, &next, slice);         /* warm-up */
        for (unsigned c = 0; c < cycles; c++) {
                double rate[2];

                for (int k = 0; k < 2; k++) {
                        int marked = (k + (int) c) % 2, fan = -1;

                        if (marked) {
                                fan = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY);
                                if (fan < 0 || fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM,
                                                             FAN_OPEN_EXEC_PERM, AT_FDCWD, mount) < 0)
                                        return die("cannot place the exec permission mark on", mount);
                        }
                        rate[marked] = slice_rate(dfd, names, nfiles, &next, slice);
                        if (fan >= 0)
                                close(fan);
                }
                ratio[c] = rate[1] / rate[0];
                sum[0] += rate[0];
                sum[1] += rate[1];
        }
        qsort(ratio, cycles, sizeof *ratio, cmp_double);
        printf("marked/unmarked median %.4f q1 %.4f q3 %.4f; unmarked %.0f ops/s, marked %.0f ops/s (%u cycles of 2 x %.2f s)\n",
               ratio[cycles / 2], ratio[cycles / 4], ratio[3 * cycles / 4], sum[0] / cycles, sum[1] / cycles,
               cycles, slice);
        return 0;
}

int main(int argc, char **argv) {
        unsigned long nfiles, ops = 0;
        double seconds, t0, t1, deadline;
        char (*names)[NAME_LEN];
        int dfd;

        const char *dir;

        page_size = sysconf(_SC_PAGESIZE);
        if (argc == 4 && strcmp(argv[1], "--drop") == 0)
                return drop(argv[2], strtoul(argv[3], NULL, 10), 1);
        if (argc == 4 && strcmp(argv[1], "--resident") == 0)
                return drop(argv[2], strtoul(argv[3], NULL, 10), 0);
        if (argc == 7 && strcmp(argv[1], "--hook") == 0) {
                unsigned long n = strtoul(argv[4], NULL, 10), cycles = strtoul(argv[5], NULL, 10);
                double slice = strtod(argv[6], NULL);

                if (n == 0 || n > 1000000 || cycles < 4 || cycles > 100000 || slice <= 0) {
                        fprintf(stderr, "openbench: --hook needs N_FILES 1..1000000, CYCLES >= 4, SLICE > 0\n");
                        return 2;
                }
                return hook_cost(argv[2], argv[3], n, (unsigned) cycles, slice);
        }
        if (argc >= 2 && strcmp(argv[1], "--mmap") == 0) {
                use_mmap = 1;
                argc--;
                argv++;
        }
        if (argc == 6 && strcmp(argv[1], "--create") == 0)
                return create(argv[2], strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10),
                              strtoul(argv[5], NULL, 10));
        if (argc == 4 && strcmp(argv[1], "--once") == 0) {
                dir = argv[2];
                nfiles = strtoul(argv[3], NULL, 10);
                seconds = 0;
        } else if (argc == 4 && argv[1][0] != '-') {
                dir = argv[1];
                nfiles = strtoul(argv[2], NULL, 10);
                seconds = strtod(argv[3], NULL);
        } else {
                fprintf(stderr, "usage: openbench [--mmap] DIR N_FILES SECONDS\n"
                                "       openbench [--mmap] --once DIR N_FILES\n"
                                "       openbench --create DIR N_FILES MIN_BYTES MAX_BYTES\n"
                                "       openbench --drop DIR N_FILES\n"
                                "       openbench --resident DIR N_FILES\n"
                                "       openbench --hook MOUNT DIR N_FILES CYCLES SLICE\n");
                return 2;
        }
        if (nfiles == 0 || nfiles > 1000000 || seconds < 0) {
                fprintf(stderr, "openbench: N_FILES must be 1..1000000, SECONDS >= 0\n");
                return 2;
        }
        if (open_files(dir, nfiles, &names, &dfd) != 0)
                return 1;

        if (seconds == 0) {
                /* single pass (--once, or SECONDS 0): every file read exactly once, no warm-up */
                t0 = now_sec();
                for (unsigned long i = 0; i < nfiles; i++)
                        if (one_file(dfd, names[i]) < 0)
                                return die("cannot read", names[i]);
                t1 = now_sec();
                printf("%.0f ops/s (%lu ops in %.3f s)\n", nfiles / (t1 - t0), nfiles, t1 - t0);
                return 0;
        }

        /* warm-up pass: pages, dentries and inodes in cache */
        for (unsigned long i = 0; i < nfiles; i++)
                if (one_file(dfd, names[i]) < 0)
                        return die("cannot read", names[i]);

        t0 = now_sec();
        deadline = t0 + seconds;
        for (unsigned long i = 0;;) {
                for (int k = 0; k < 256; k++) {
                        if (one_file(dfd, names[i]) < 0)
                                return die("cannot read", names[i]);
                        if (++i == nfiles)
                                i = 0;
                }
                ops += 256;
                t1 = now_sec();
                if (t1 >= deadline)
                        break;
        }
        printf("%.0f ops/s (%lu ops in %.3f s)\n", ops / (t1 - t0), ops, t1 - t0);
        return 0;
}
