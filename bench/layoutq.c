/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Layout quality of a list of files read whole, in the given order, with the daemon's own model
 * (daemon/plan/layout.c, the same code `seeklessctl plan` and `report` use). See bench/README.md.
 *
 *   layoutq [--device-bytes N] FILE...
 *   layoutq [--device-bytes N] --ranges < LIST     LIST: lines "PATH<TAB>OFFSET<TAB>LENGTH", in read order
 *
 * Prints one JSON object on one line:
 *   {"files":..,"bytes":..,"extents":..,"discontinuities":..,"span":..,"modeled_ms":..,"device_bytes":..}
 * bytes are the bytes of the extents walked (allocated blocks, so whole blocks), span in bytes.
 * The device size for the seek model defaults to the size of the filesystem holding the first file
 * (fstatfs: f_blocks * f_bsize, as the planner does). Files with no blocks count for nothing, as in the
 * daemon. With --ranges, only the bytes of each range are walked (the file's extents cut to the range, each
 * piece walked like a file's extents), in the list's order, and files counts the distinct paths. Exits 1 if a file cannot be opened
 * or mapped, 2 on a malformed list.
 *
 *   cc -O2 -I common -I daemon/plan -I daemon/fs bench/layoutq.c daemon/plan/layout.c daemon/fs/fiemap.c -lm -o layoutq
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "fs/fiemap.h"
#include "plan/layout.h"

static int usage(void) {
        fprintf(stderr, "usage: layoutq [--device-bytes N] FILE...\n"
                        "       layoutq [--device-bytes N] --ranges < LIST\n");
        return 2;
}

static int device_size(int fd, const char *path, uint64_t *ret) {
        struct statfs sfs;

        if (fstatfs(fd, &sfs) < 0) {
                fprintf(stderr, "layoutq: fstatfs %s: %m\n", path);
                return -1;
        }
        *ret = (uint64_t) sfs.f_blocks * (uint64_t) sfs.f_bsize;
        return 0;
}

/* The part of extents[0..n) in [offset, offset + length) into cut[] (room for n), logical and physical moved alike. */
static size_t clip(const Extent *extents, size_t n, uint64_t offset, uint64_t length, Extent *cut) {
        uint64_t end = length > UINT64_MAX - offset ? UINT64_MAX : offset + length;
        size_t k = 0;

        for (size_t i = 0; i < n; i++) {
                const Extent *e = &extents[i];
                uint64_t lo = e->logical > offset ? e->logical : offset;
                uint64_t hi = e->logical + e->length < end ? e->logical + e->length : end;

                if (lo >= hi)
                        continue;
                cut[k] = *e;
                cut[k].logical = lo;
                cut[k].physical = e->physical + (lo - e->logical);
                cut[k].length = hi - lo;
                k++;
        }
        return k;
}

/* Ranges from stdin; the extents of the latest file are kept, a list usually names a file many times in a row. */
static int ranges(uint64_t device_bytes) {
        char line[8192], last[4096] = "", *path, *off, *len, *end;
        Extent *extents = NULL, *cut = NULL;
        size_t n = 0;
        uint64_t files = 0, lineno = 0;
        LayoutWalker w;
        LayoutQuality q;
        bool started = false;
        char (*seen)[4096] = NULL;
        size_t n_seen = 0;

        while (fgets(line, sizeof line, stdin)) {
                uint64_t offset, length;
                bool known = false;

                lineno++;
                line[strcspn(line, "\n")] = 0;
                path = strtok(line, "\t");
                off = strtok(NULL, "\t");
                len = strtok(NULL, "\t");
                if (!path || !off || !len) {
                        fprintf(stderr, "layoutq: line %" PRIu64 ": expected PATH<TAB>OFFSET<TAB>LENGTH\n", lineno);
                        return 2;
                }
                errno = 0;
                offset = strtoull(off, &end, 10);
                if (errno || *end || end == off)
                        return fprintf(stderr, "layoutq: line %" PRIu64 ": bad offset\n", lineno), 2;
                length = strtoull(len, &end, 10);
                if (errno || *end || end == len || length == 0)
                        return fprintf(stderr, "layoutq: line %" PRIu64 ": bad length\n", lineno), 2;

                if (strcmp(path, last) != 0) {
                        int fd, r;

                        free(extents);
                        extents = NULL;
                        n = 0;
                        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                        if (fd < 0) {
                                fprintf(stderr, "layoutq: %s: %m\n", path);
                                return 1;
                        }
                        if (!started) {
                                if (device_bytes == 0 && device_size(fd, path, &device_bytes) < 0)
                                        return 1;
                                layout_walker_init(&w, device_bytes);
                                started = true;
                        }
                        r = fiemap_get(fd, &extents, &n);
                        close(fd);
                        if (r < 0) {
                                fprintf(stderr, "layoutq: FIEMAP %s: %s\n", path, strerror(-r));
                                return 1;
                        }
                        free(cut);
                        cut = malloc((n ? n : 1) * sizeof *cut);
                        if (!cut)
                                return 1;
                        snprintf(last, sizeof last, "%s", path);
                        for (size_t i = 0; i < n_seen && !known; i++)
                                known = strcmp(seen[i], path) == 0;
                        if (!known) {
                                char (*ns)[4096] = realloc(seen, (n_seen + 1) * sizeof *seen);

                                if (!ns)
                                        return 1;
                                seen = ns;
                                snprintf(seen[n_seen++], sizeof *seen, "%s", path);
                                files++;
                        }
                }
                /* the walker counts a file per call: the ranges' files are counted above instead */
                layout_walker_add_file(&w, cut, clip(extents, n, offset, length, cut));
        }
        free(extents);
        free(cut);
        free(seen);
        if (!started)
                return usage();
        layout_walker_finish(&w, &q);
        printf("{\"files\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"extents\":%" PRIu64 ",\"discontinuities\":%" PRIu64
               ",\"span\":%" PRIu64 ",\"modeled_ms\":%.1f,\"device_bytes\":%" PRIu64 "}\n",
               files, q.bytes, q.extents, q.discontinuities, q.span, q.modeled_read_ms, device_bytes);
        return 0;
}

int main(int argc, char **argv) {
        uint64_t device_bytes = 0;
        LayoutWalker w;
        LayoutQuality q;
        int first = 1;

        if (first < argc && strcmp(argv[first], "--device-bytes") == 0) {
                char *end;

                if (first + 1 >= argc)
                        return usage();
                errno = 0;
                device_bytes = strtoull(argv[first + 1], &end, 10);
                if (errno || *end || end == argv[first + 1] || device_bytes == 0)
                        return usage();
                first += 2;
        } else if (first < argc && strncmp(argv[first], "--device-bytes=", 15) == 0) {
                char *end;

                errno = 0;
                device_bytes = strtoull(argv[first] + 15, &end, 10);
                if (errno || *end || device_bytes == 0)
                        return usage();
                first++;
        }
        if (first < argc && strcmp(argv[first], "--ranges") == 0)
                return first + 1 == argc ? ranges(device_bytes) : usage();
        if (first < argc && strcmp(argv[first], "--") == 0)
                first++;
        if (first >= argc)
                return usage();

        for (int i = first; i < argc; i++) {
                Extent *extents = NULL;
                size_t n = 0;
                int fd, r;

                fd = open(argv[i], O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0) {
                        fprintf(stderr, "layoutq: %s: %m\n", argv[i]);
                        return 1;
                }
                if (i == first) {
                        if (device_bytes == 0) {
                                struct statfs sfs;

                                if (fstatfs(fd, &sfs) < 0) {
                                        fprintf(stderr, "layoutq: fstatfs %s: %m\n", argv[i]);
                                        return 1;
                                }
                                device_bytes = (uint64_t) sfs.f_blocks * (uint64_t) sfs.f_bsize;
                        }
                        layout_walker_init(&w, device_bytes);
                }
                r = fiemap_get(fd, &extents, &n);
                close(fd);
                if (r < 0) {
                        fprintf(stderr, "layoutq: FIEMAP %s: %s\n", argv[i], strerror(-r));
                        return 1;
                }
                layout_walker_add_file(&w, extents, n);
                free(extents);
        }

        layout_walker_finish(&w, &q);
        printf("{\"files\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"extents\":%" PRIu64 ",\"discontinuities\":%" PRIu64
               ",\"span\":%" PRIu64 ",\"modeled_ms\":%.1f,\"device_bytes\":%" PRIu64 "}\n",
               q.files, q.bytes, q.extents, q.discontinuities, q.span, q.modeled_read_ms, device_bytes);
        return 0;
}
