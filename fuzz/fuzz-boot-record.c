/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The boot collector's record (boot-collect.h): the input is written as the keys file and taken into a
 * boot session by boot_collect_take(), as seeklessd does at start. The watched filesystems are the one the
 * first record names (so that records get past the filter) and the scratch directory's. Checked after:
 * a record is taken whole or not at all (-EBADMSG, nothing added), the file is removed either way, every
 * path kept is absolute; every line that parses gives back the same key and path when written again with
 * boot_collect_escape_path(). The same bytes are also read as the collector's exclude file. */
#include <inttypes.h>
#include <sys/stat.h>

#include "record/boot-collect.h"
#include "fuzz-util.h"

static char keys_path[4096], exclude_path[4096];
static uint64_t scratch_fsid;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_log_setup();
        fuzz_path(keys_path, sizeof keys_path, BOOT_COLLECT_KEYS_FILE);
        fuzz_path(exclude_path, sizeof exclude_path, BOOT_COLLECT_EXCLUDE_FILE);
        FUZZ_ASSERT(fsid_of_path(fuzz_dir(), &scratch_fsid) >= 0);
        return 0;
}

static void hex(const FileKey *k, char *buf) {
        for (uint32_t i = 0; i < k->handle_len; i++)
                sprintf(buf + 2 * i, "%02x", k->handle[i]);
        buf[2 * k->handle_len] = 0;
}

/* Every line that parses, written again as the collector writes it, parses to the same key and path. */
static void check_lines(const uint8_t *data, size_t size, uint64_t *ret_first_fsid, bool *ret_any) {
        const uint8_t *p = data, *end = data + size;

        *ret_any = false;
        while (p < end) {
                const uint8_t *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = (size_t) ((nl ?: end) - p);
                _cleanup_free_ char *line = strndup((const char *) p, n), *path = NULL, *again = NULL,
                                    *escaped = NULL, *path2 = NULL;
                char h[2 * FID_HANDLE_MAX + 1];
                FileKey k, k2;

                FUZZ_ASSERT(line);
                p = nl ? nl + 1 : end;
                if (boot_collect_parse_line(line, &k, &path) < 0)
                        continue;
                FUZZ_ASSERT(k.handle_len > 0 && k.handle_len <= FID_HANDLE_MAX);
                FUZZ_ASSERT(!path || path[0] == '/');
                if (!*ret_any)
                        *ret_first_fsid = k.fsid;
                *ret_any = true;

                hex(&k, h);
                if (path) {
                        escaped = boot_collect_escape_path(path);
                        FUZZ_ASSERT(escaped);
                }
                FUZZ_ASSERT(asprintf(&again, "%016" PRIx64 " %" PRIi32 " %s%s%s\n", k.fsid, k.handle_type, h,
                                     escaped ? " " : "", escaped ?: "") >= 0);
                FUZZ_ASSERT(boot_collect_parse_line(again, &k2, &path2) == 0);
                FUZZ_ASSERT(file_key_equal(&k, &k2));
                FUZZ_ASSERT(!path == !path2 && (!path || streq(path, path2)));
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(session_freep) Session *s = NULL;
        Filesystem fs[2] = { { .fsid = scratch_fsid }, { .fsid = scratch_fsid } };
        FilesystemList watched = { .items = fs, .n = 2 };
        struct stat st;
        bool any;
        int r;

        check_lines(data, size, &fs[1].fsid, &any);

        fuzz_write(keys_path, data, size);
        FUZZ_ASSERT(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s) == 0);
        r = boot_collect_take(fuzz_dir(), s, &watched, 0);
        if (fuzz_verbose())
                fprintf(stderr, "boot_collect_take: %i\n", r);
        FUZZ_ASSERT(r >= 0 || r == -EBADMSG);
        FUZZ_ASSERT(r < 0 ? s->n_files == 0 : (size_t) r == s->n_files);
        FUZZ_ASSERT(r < 0 || any || s->n_files == 0);
        for (size_t i = 0; i < s->n_files; i++) {
                _cleanup_free_ char *p = session_path(s, i);

                FUZZ_ASSERT(!s->files[i].path || (p && p[0] == '/'));
        }
        FUZZ_ASSERT(stat(keys_path, &st) < 0 && errno == ENOENT);

        /* the exclude file: pid lines the collector reads while it runs */
        fuzz_write(exclude_path, data, size);
        {
                _cleanup_close_ int fd = open(exclude_path, O_RDONLY | O_CLOEXEC);
                FUZZ_ASSERT(fd >= 0);
                (void) boot_collect_pid_listed(fd, 4242);
                (void) boot_collect_pid_listed(fd, 1);
        }
        return 0;
}
