/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Replays fuzz inputs through a target's LLVMFuzzerTestOneInput() without libFuzzer: the unit suite runs
 * every committed seed and regression input this way (with gcc, and under ASan/UBSan in the sanitized
 * pass), so an input that once crashed a target keeps being checked.
 *   usage: fuzz-replay-TARGET FILE|DIR...    (a directory: every regular file in it, in name order)
 * An argument that does not exist is skipped (a target has a regressions/ directory only once an input
 * crashed it). Exits 0 when every input ran (a crash aborts the process), 1 when an argument can't be
 * read or there was no input at all. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz-util.h"

/* Defined by the targets that need a one-time setup. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int replay_file(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ uint8_t *buf = NULL;
        size_t n = 0, allocated = 0;

        if (!f) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -errno;
        }
        for (;;) {
                size_t k;

                if (n == allocated) {
                        uint8_t *p = realloc(buf, allocated = allocated ? 2 * allocated : 65536);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                }
                k = fread(buf + n, 1, allocated - n, f);
                if (k == 0)
                        break;
                n += k;
        }
        if (ferror(f)) {
                fprintf(stderr, "%s: read error\n", path);
                return -EIO;
        }
        fprintf(stderr, "replaying %s (%zu bytes)\n", path, n);
        /* a copy of exactly n bytes, as libFuzzer passes it: a read past the end is an ASan report */
        {
                _cleanup_free_ uint8_t *exact = malloc(n ? n : 1);
                if (!exact)
                        return -ENOMEM;
                memcpy(exact, buf, n);
                (void) LLVMFuzzerTestOneInput(exact, n);
        }
        return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
        return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char *argv[]) {
        unsigned replayed = 0;

        if (LLVMFuzzerInitialize)
                (void) LLVMFuzzerInitialize(&argc, &argv);
        for (int i = 1; i < argc; i++) {
                struct dirent **l = NULL;
                struct stat st;
                int n;

                if (stat(argv[i], &st) < 0) {
                        /* a target without regression inputs has no regressions/TARGET directory */
                        if (errno == ENOENT) {
                                fprintf(stderr, "%s: not there, skipped\n", argv[i]);
                                continue;
                        }
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return EXIT_FAILURE;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (replay_file(argv[i]) < 0)
                                return EXIT_FAILURE;
                        replayed++;
                        continue;
                }
                n = scandir(argv[i], &l, NULL, by_name);
                if (n < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return EXIT_FAILURE;
                }
                for (int k = 0; k < n; k++) {
                        char path[4096];

                        snprintf(path, sizeof path, "%s/%s", argv[i], l[k]->d_name);
                        if (l[k]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                                if (replay_file(path) < 0)
                                        return EXIT_FAILURE;
                                replayed++;
                        }
                        free(l[k]);
                }
                free(l);
        }
        if (replayed == 0) {
                fprintf(stderr, "no input given\n");
                return EXIT_FAILURE;
        }
        printf("%u inputs replayed\n", replayed);
        return EXIT_SUCCESS;
}
