/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seekless.conf(5) with drop-ins, through config_load() as the daemon calls it: the input is the main file,
 * then up to 8 drop-ins, separated by lines "--- NAME" (the drop-in's file name in seekless.conf.d/;
 * drop-ins are read in name order, and only *.conf ones). Afterwards every setting must hold a value
 * within its documented range: a bad value is ignored, never half-applied. */
#include <dirent.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "policy/conf.h"
#include "fuzz-util.h"

#define DROPINS_MAX 8

static char main_path[4096], dropin_dir[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_log_setup();
        fuzz_path(main_path, sizeof main_path, "seekless.conf");
        fuzz_path(dropin_dir, sizeof dropin_dir, "seekless.conf.d");
        FUZZ_ASSERT(mkdir(dropin_dir, 0700) == 0);
        return 0;
}

static void clear_dropins(void) {
        _cleanup_closedir_ DIR *d = opendir(dropin_dir);
        struct dirent *de;

        FUZZ_ASSERT(d);
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        FUZZ_ASSERT(unlinkat(dirfd(d), de->d_name, 0) == 0);
}

/* A drop-in's name from its separator line: the bytes after "--- " up to the newline, if they make a
 * plain file name, else a numbered one. */
static void dropin_name(const uint8_t *p, size_t n, unsigned i, char *buf, size_t size) {
        bool ok = n > 0 && n < 64;

        for (size_t k = 0; ok && k < n; k++)
                ok = p[k] != '/' && p[k] != 0;
        if (ok && !(n <= 2 && p[0] == '.' && (n == 1 || p[1] == '.')))
                snprintf(buf, size, "%.*s", (int) n, (const char *) p);
        else
                snprintf(buf, size, "%02u.conf", i);
}

/* The first separator line at or after from: "--- " at the start of the input or of a line. */
static const uint8_t *next_separator(const uint8_t *data, const uint8_t *from, const uint8_t *end) {
        for (const uint8_t *q = from; q + 4 <= end; q++)
                if ((q == data || q[-1] == '\n') && memcmp(q, "--- ", 4) == 0)
                        return q;
        return NULL;
}

static void check_ranges(const Config *c) {
        FUZZ_ASSERT(c->boot_tail_usec <= USEC_PER_DAY);
        FUZZ_ASSERT(c->boot_window_usec >= 1 && c->boot_window_usec <= USEC_PER_DAY);
        FUZZ_ASSERT(c->launch_window_usec >= 1 && c->launch_window_usec <= USEC_PER_DAY);
        FUZZ_ASSERT(c->max_launches_per_boot <= 1000);
        FUZZ_ASSERT(c->min_launch_files >= 1 && c->min_launch_files <= 100000);
        FUZZ_ASSERT(c->keep_boots >= 1 && c->keep_boots <= 1000);
        FUZZ_ASSERT(c->keep_launches >= 1 && c->keep_launches <= 1000);
        FUZZ_ASSERT(c->max_profiles >= 1 && c->max_profiles <= 100000);
        FUZZ_ASSERT(c->max_profiles_per_user >= 1 && c->max_profiles_per_user <= 100000);
        FUZZ_ASSERT(c->max_session_files >= 1 && c->max_session_files <= 1000000);
        FUZZ_ASSERT(c->max_hot_set_mib >= 1 && c->max_hot_set_mib <= 1048576);
        FUZZ_ASSERT(c->max_file_mib >= 1 && c->max_file_mib <= 1048576);
        FUZZ_ASSERT(c->min_file_age_usec <= 365 * USEC_PER_DAY);
        FUZZ_ASSERT(c->rate_limit_mibps <= 100000);
        FUZZ_ASSERT(c->early_budget_usec <= 10 * 60 * USEC_PER_SEC);
        FUZZ_ASSERT(c->idle_usec <= USEC_PER_DAY);
        FUZZ_ASSERT(c->min_interval_hours <= 8760);
        FUZZ_ASSERT(c->boot_quiet_usec <= USEC_PER_DAY);
        FUZZ_ASSERT(isfinite(c->max_io_pressure) && c->max_io_pressure >= 0 && c->max_io_pressure <= 100);
        FUZZ_ASSERT(isfinite(c->max_load_per_cpu) && c->max_load_per_cpu >= 0 && c->max_load_per_cpu <= 1000);
        FUZZ_ASSERT(isfinite(c->max_quality_loss_percent) && c->max_quality_loss_percent >= 0 &&
                    c->max_quality_loss_percent <= 10000);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const uint8_t *end = data + size, *sep;
        int saved, r;
        Config c;

        clear_dropins();
        sep = next_separator(data, data, end);
        fuzz_write(main_path, data, (size_t) ((sep ?: end) - data));

        for (unsigned i = 0; sep && i < DROPINS_MAX; i++) {
                const uint8_t *name = sep + 4, *nl = memchr(name, '\n', (size_t) (end - name)), *body;
                char fname[80], path[4096 + 80];

                dropin_name(name, (size_t) ((nl ?: end) - name), i, fname, sizeof fname);
                body = nl ? nl + 1 : end;
                sep = next_separator(data, body, end);
                snprintf(path, sizeof path, "%s/%s", dropin_dir, fname);
                fuzz_write(path, body, (size_t) ((sep ?: end) - body));
        }

        config_set_defaults(&c);
        saved = fuzz_stderr_off();
        r = config_load(&c, main_path, dropin_dir);
        fuzz_stderr_on(saved);
        FUZZ_ASSERT(r == 0);
        check_ranges(&c);
        return 0;
}
