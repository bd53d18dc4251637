/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "policy/conf.h"
#include "common/log.h"
#include "common/macro.h"
#include "common/time-util.h"


typedef enum ConfigValueType {
        CONFIG_SEC,
        CONFIG_UNSIGNED,
        CONFIG_HOURS,    /* unsigned count of hours, stored as unsigned */
        CONFIG_DOUBLE,   /* limits in dmin/dmax */
        CONFIG_PERCENT,  /* a double with an optional '%'; limits in dmin/dmax */
        CONFIG_BOOL,
        CONFIG_RECORDER, /* a RecorderKind */
} ConfigValueType;

static const char *const recorder_kind_table[_RECORDER_KIND_MAX] = {
        [RECORDER_FANOTIFY] = "fanotify",
        [RECORDER_BPF] = "bpf",
        [RECORDER_AUTO] = "auto",
};

DEFINE_STRING_TABLE(recorder_kind, RecorderKind)

/* One row per key, in the spirit of systemd's oomd-conf.c: the generic loop finds the row, the per-type
 * parser checks the limits and stores the value at the offset. */
typedef struct ConfigItem {
        const char *section;
        const char *key;
        ConfigValueType type;
        size_t offset;
        uint64_t min;
        uint64_t max;
        double dmin;     /* CONFIG_DOUBLE, CONFIG_PERCENT */
        double dmax;
} ConfigItem;

static const ConfigItem config_items[] = {
        { "Record", "BootTailSec",        CONFIG_SEC,      offsetof(Config, boot_tail_usec),        0, USEC_PER_DAY },
        { "Record", "BootWindowSec",      CONFIG_SEC,      offsetof(Config, boot_window_usec),      1, USEC_PER_DAY },
        { "Record", "LaunchWindowSec",    CONFIG_SEC,      offsetof(Config, launch_window_usec),    1, USEC_PER_DAY },
        { "Record", "Recorder",           CONFIG_RECORDER, offsetof(Config, recorder),              0, 0 },
        { "Record", "MaxLaunchesPerBoot", CONFIG_UNSIGNED, offsetof(Config, max_launches_per_boot), 0, 1000 },
        { "Record", "MinLaunchFiles",     CONFIG_UNSIGNED, offsetof(Config, min_launch_files),      1, 100000 },
        { "Record", "KeepBoots",          CONFIG_UNSIGNED, offsetof(Config, keep_boots),            1, 1000 },
        { "Record", "KeepLaunches",       CONFIG_UNSIGNED, offsetof(Config, keep_launches),         1, 1000 },
        { "Record", "MaxProfiles",        CONFIG_UNSIGNED, offsetof(Config, max_profiles),          1, 100000 },
        { "Record", "MaxProfilesPerUser", CONFIG_UNSIGNED, offsetof(Config, max_profiles_per_user), 1, 100000 },
        { "Record", "MaxSessionFiles",    CONFIG_UNSIGNED, offsetof(Config, max_session_files),     1, 1000000 },
        { "Record", "BootUserShare",      CONFIG_PERCENT,  offsetof(Config, boot_user_share),       0, 0, 0.0, 100.0 },
        { "Optimize", "MaxHotSetMiB",     CONFIG_UNSIGNED, offsetof(Config, max_hot_set_mib),       1, 1048576 },
        { "Optimize", "MaxFileMiB",       CONFIG_UNSIGNED, offsetof(Config, max_file_mib),          1, 1048576 },
        { "Optimize", "MinFileAgeSec",    CONFIG_SEC,      offsetof(Config, min_file_age_usec),     0, 365 * USEC_PER_DAY },
        { "Optimize", "RateLimitMiBps",   CONFIG_UNSIGNED, offsetof(Config, rate_limit_mibps),      0, 100000 },
        { "Optimize", "EarlyBudgetSec",   CONFIG_SEC,      offsetof(Config, early_budget_usec),     0, 10 * 60 * USEC_PER_SEC },
        { "Optimize", "MakeRoom",         CONFIG_BOOL,     offsetof(Config, make_room),             0, 1 },
        { "Idle", "IdleSec",              CONFIG_SEC,      offsetof(Config, idle_usec),             0, USEC_PER_DAY },
        { "Idle", "MinIntervalHours",     CONFIG_HOURS,    offsetof(Config, min_interval_hours),    0, 8760 },
        { "Idle", "BootQuietSec",         CONFIG_SEC,      offsetof(Config, boot_quiet_usec),       0, USEC_PER_DAY },
        { "Idle", "MaxIOPressure",        CONFIG_PERCENT,  offsetof(Config, max_io_pressure),       0, 0, 0.0, 100.0 },
        { "Idle", "MaxLoadPerCPU",        CONFIG_DOUBLE,   offsetof(Config, max_load_per_cpu),      0, 0, 0.0, 1000.0 },
        { "Idle", "MaxQualityLossPercent", CONFIG_PERCENT, offsetof(Config, max_quality_loss_percent), 0, 0, 0.0, 10000.0 },
        { "Idle", "OptimizeNonRotational", CONFIG_BOOL,    offsetof(Config, optimize_non_rotational), 0, 1 },
        { "Prefetch", "Prefetch",         CONFIG_BOOL,     offsetof(Config, prefetch),              0, 1 },
        { "Prefetch", "PrefetchMaxMiB",   CONFIG_UNSIGNED, offsetof(Config, prefetch_max_mib),      1, 1048576 },
        { "Prefetch", "PrefetchMinAvailableMiB", CONFIG_UNSIGNED, offsetof(Config, prefetch_min_available_mib), 0, 1048576 },
        { "Prefetch", "PrefetchMaxMemoryPressure", CONFIG_PERCENT, offsetof(Config, prefetch_max_memory_pressure), 0, 0, 0.0, 100.0 },
        { "Prefetch", "PrefetchBudgetSec", CONFIG_SEC,     offsetof(Config, prefetch_budget_usec),  1, 10 * 60 * USEC_PER_SEC },
        { "Prefetch", "PrefetchNonRotational", CONFIG_BOOL, offsetof(Config, prefetch_non_rotational), 0, 1 },
        { "Prefetch", "PrefetchLaunches", CONFIG_BOOL,     offsetof(Config, prefetch_launches),     0, 1 },
        { "Prefetch", "PrefetchBoot",     CONFIG_BOOL,     offsetof(Config, prefetch_boot),         0, 1 },
};

/* Sections we know; keys in any other section are skipped silently after one warning for the header. */
static const char *const config_sections[] = {
        "Record",
        "Optimize",
        "Idle",
        "Prefetch",
};

void config_set_defaults(Config *c) {
        *c = (Config) {
                .boot_tail_usec = 30 * USEC_PER_SEC,
                .boot_window_usec = 120 * USEC_PER_SEC,
                .launch_window_usec = 10 * USEC_PER_SEC,
                .max_launches_per_boot = 3,
                .min_launch_files = 2,
                .keep_boots = 10,
                .keep_launches = 5,
                .max_profiles = 512,
                .max_profiles_per_user = 64,
                .max_session_files = 65536,
                .boot_user_share = 25.0,
                .recorder = RECORDER_AUTO,
                .max_hot_set_mib = 1024,
                .max_file_mib = 512,
                .min_file_age_usec = 600 * USEC_PER_SEC,
                .rate_limit_mibps = 0,
                .early_budget_usec = 2 * USEC_PER_SEC,
                .idle_usec = 300 * USEC_PER_SEC,
                .min_interval_hours = 24,
                .boot_quiet_usec = 600 * USEC_PER_SEC,
                .max_io_pressure = 10.0,
                .max_load_per_cpu = 0.5,
                .max_quality_loss_percent = 25.0,
                .optimize_non_rotational = false,
                .make_room = true,
                .prefetch = true,
                .prefetch_max_mib = 512,
                .prefetch_min_available_mib = 256,
                .prefetch_max_memory_pressure = 10.0,
                .prefetch_budget_usec = 10 * USEC_PER_SEC,
                .prefetch_non_rotational = false,
                .prefetch_launches = true,
                .prefetch_boot = true,
        };
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static bool is_space(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static const struct {
        const char *suffix;
        uint64_t usec;
} time_units[] = {
        { "us",  1 },
        { "ms",  USEC_PER_MSEC },
        { "s",   USEC_PER_SEC },
        { "sec", USEC_PER_SEC },
        { "m",   USEC_PER_MINUTE },
        { "min", USEC_PER_MINUTE },
        { "h",   USEC_PER_HOUR },
        { "hr",  USEC_PER_HOUR },
        { "d",   USEC_PER_DAY },
};

int config_parse_sec(const char *s, uint64_t *ret_usec) {
        uint64_t whole = 0, frac = 0, frac_div = 1, unit = USEC_PER_SEC, usec, f;
        bool have_digits = false;
        const char *p = s;

        if (!s)
                return -EINVAL;

        /* Integer part. Checked by hand because strtoull() accepts signs and leading blanks. */
        for (; is_digit(*p); p++) {
                unsigned d = *p - '0';

                have_digits = true;
                if (whole > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                whole = whole * 10 + d;
        }

        /* Fraction: keep up to 9 digits (nanosecond resolution for "s", more than enough), check the rest. */
        if (*p == '.') {
                unsigned n = 0;

                p++;
                if (!is_digit(*p))
                        return -EINVAL;
                for (; is_digit(*p); p++, n++)
                        if (n < 9) {
                                frac = frac * 10 + (unsigned) (*p - '0');
                                frac_div *= 10;
                        }
                have_digits = true;
        }

        if (!have_digits)
                return -EINVAL;

        /* Optional single space (or tab) between number and unit, then the unit. */
        if (*p == ' ' || *p == '\t')
                p++;
        if (*p != '\0') {
                bool found = false;

                for (size_t i = 0; i < ELEMENTSOF(time_units); i++)
                        if (streq(p, time_units[i].suffix)) {
                                unit = time_units[i].usec;
                                found = true;
                                break;
                        }
                if (!found)
                        return -EINVAL;
        } else if (p > s && (p[-1] == ' ' || p[-1] == '\t'))
                return -EINVAL; /* "30 " with nothing after the blank */

        if (whole > UINT64_MAX / unit)
                return -ERANGE;
        usec = whole * unit;

        /* frac * unit / frac_div, split because frac * unit can reach 8.64e19 > UINT64_MAX; with
         * frac < frac_div ≤ 1e9 neither product below overflows. Sub-microsecond remainders are dropped. */
        f = frac * (unit / frac_div) + frac * (unit % frac_div) / frac_div;
        if (usec > UINT64_MAX - f)
                return -ERANGE;
        usec += f;

        *ret_usec = usec;
        return 0;
}

int config_parse_unsigned(const char *s, unsigned min, unsigned max, unsigned *ret) {
        uint64_t v = 0;

        if (!s || !is_digit(*s))
                return -EINVAL;

        for (const char *p = s; *p; p++) {
                if (!is_digit(*p))
                        return -EINVAL;
                v = v * 10 + (unsigned) (*p - '0');
                if (v > UINT_MAX) {
                        /* Keep scanning so "99999999999x" is reported as garbage, not as out of range. */
                        for (p++; *p; p++)
                                if (!is_digit(*p))
                                        return -EINVAL;
                        return -ERANGE;
                }
        }

        if (v < min || v > max)
                return -ERANGE;

        *ret = (unsigned) v;
        return 0;
}

/* Parses the n bytes at s as a decimal number. */
static int parse_decimal(const char *s, size_t n, double min, double max, double *ret) {
        const char *p = s, *e = s + n;
        double v = 0, scale = 1;
        bool have_digits = false;

        /* By hand rather than strtod(): that one accepts signs, blanks, exponents, "inf", hex and the
         * locale's decimal separator. */
        for (; p < e && is_digit(*p); p++) {
                have_digits = true;
                v = v * 10 + (*p - '0');
        }
        if (p < e && *p == '.') {
                p++;
                if (p >= e || !is_digit(*p))
                        return -EINVAL;
                /* Digits into one mantissa, divided once at the end: exact when both fit in 53 bits, so
                 * "0.75" is 0.75 and not 0.7 + 0.05. */
                for (; p < e && is_digit(*p); p++) {
                        scale *= 10;
                        v = v * 10 + (*p - '0');
                }
                have_digits = true;
        }
        if (!have_digits || p != e)
                return -EINVAL;
        v /= scale;
        if (!(v >= min && v <= max)) /* also catches an infinity from a very long digit string */
                return -ERANGE;

        *ret = v;
        return 0;
}

int config_parse_double(const char *s, double min, double max, double *ret) {
        if (!s)
                return -EINVAL;
        return parse_decimal(s, strlen(s), min, max, ret);
}

int config_parse_percent(const char *s, double min, double max, double *ret) {
        size_t n;

        if (!s)
                return -EINVAL;

        n = strlen(s);
        if (n > 0 && s[n - 1] == '%')
                n--;
        return parse_decimal(s, n, min, max, ret);
}

int config_parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

        if (!s)
                return -EINVAL;

        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        return -EINVAL;
}

static void config_assign(const char *path, unsigned line, const ConfigItem *item, const char *value,
                          Config *c) {
        int r;

        switch (item->type) {

        case CONFIG_SEC: {
                char lo[32], hi[32];
                uint64_t usec;

                r = config_parse_sec(value, &usec);
                if (r >= 0 && (usec < item->min || usec > item->max))
                        r = -ERANGE;
                if (r < 0) {
                        char range[80];

                        (void) format_timespan(lo, sizeof lo, item->min, TIMESPAN_EXACT);
                        (void) format_timespan(hi, sizeof hi, item->max, TIMESPAN_EXACT);
                        if (item->min > 0)
                                snprintf(range, sizeof range, "greater than 0 and at most %s", hi);
                        else
                                snprintf(range, sizeof range, "%s..%s", lo, hi);
                        (void) log_syntax(path, line,
                                          "%s for %s=: '%s' (expected a time span %s, e.g. 30s), ignoring.",
                                          r == -ERANGE ? "Value out of range" : "Invalid value",
                                          item->key, value, range);
                        return;
                }
                *(uint64_t *) ((uint8_t *) c + item->offset) = usec;
                return;
        }

        case CONFIG_UNSIGNED:
        case CONFIG_HOURS: {
                unsigned u;

                r = config_parse_unsigned(value, (unsigned) item->min, (unsigned) item->max, &u);
                if (r < 0) {
                        (void) log_syntax(path, line,
                                          "%s for %s=: '%s' (expected %s %" PRIu64 "..%" PRIu64 "), ignoring.",
                                          r == -ERANGE ? "Value out of range" : "Invalid value",
                                          item->key, value,
                                          item->type == CONFIG_HOURS ? "a number of hours" : "an integer",
                                          item->min, item->max);
                        return;
                }
                *(unsigned *) ((uint8_t *) c + item->offset) = u;
                return;
        }

        case CONFIG_DOUBLE:
        case CONFIG_PERCENT: {
                double d;

                if (item->type == CONFIG_PERCENT)
                        r = config_parse_percent(value, item->dmin, item->dmax, &d);
                else
                        r = config_parse_double(value, item->dmin, item->dmax, &d);
                if (r < 0) {
                        (void) log_syntax(path, line,
                                          item->type == CONFIG_PERCENT ?
                                          "%s for %s=: '%s' (expected a percentage %g..%g, e.g. 10 or 2.5%%), ignoring." :
                                          "%s for %s=: '%s' (expected a decimal number %g..%g, e.g. 0.5), ignoring.",
                                          r == -ERANGE ? "Value out of range" : "Invalid value",
                                          item->key, value, item->dmin, item->dmax);
                        return;
                }
                *(double *) ((uint8_t *) c + item->offset) = d;
                return;
        }

        case CONFIG_BOOL: {
                bool b;

                r = config_parse_bool(value, &b);
                if (r < 0) {
                        (void) log_syntax(path, line,
                                          "Invalid value for %s=: '%s' (expected a boolean: yes or no), ignoring.",
                                          item->key, value);
                        return;
                }
                *(bool *) ((uint8_t *) c + item->offset) = b;
                return;
        }

        case CONFIG_RECORDER: {
                RecorderKind k = recorder_kind_from_string(value);

                if (k < 0) {
                        (void) log_syntax(path, line,
                                          "Invalid value for %s=: '%s' (expected auto, bpf or fanotify), ignoring.",
                                          item->key, value);
                        return;
                }
                *(RecorderKind *) ((uint8_t *) c + item->offset) = k;
                return;
        }
        }
}

static char *strstrip(char *s) {
        char *e;

        while (is_space(*s))
                s++;
        e = s + strlen(s);
        while (e > s && is_space(e[-1]))
                e--;
        *e = '\0';
        return s;
}

static const char *section_lookup(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(config_sections); i++)
                if (streq(config_sections[i], name))
                        return config_sections[i];
        return NULL;
}

typedef enum SectionState {
        SECTION_NONE,     /* before the first header: assignments are errors */
        SECTION_KNOWN,    /* keys are looked up in config_items */
        SECTION_IGNORED,  /* unknown or malformed header, already warned about: skip keys silently */
} SectionState;

static void config_parse_line(const char *path, unsigned line, char *l, const char **section,
                              SectionState *state, Config *c) {
        char *eq, *key, *value;

        l = strstrip(l);
        if (*l == '\0' || *l == '#' || *l == ';')
                return;

        if (*l == '[') {
                size_t n = strlen(l);
                char *name;

                *section = NULL;
                *state = SECTION_IGNORED;

                if (l[n - 1] != ']') {
                        (void) log_syntax(path, line, "Invalid section header '%s': missing ']', ignoring.", l);
                        return;
                }
                l[n - 1] = '\0';
                name = l + 1;
                if (*name == '\0' || strpbrk(name, "[]")) {
                        (void) log_syntax(path, line, "Invalid section header '[%s]', ignoring.", name);
                        return;
                }
                *section = section_lookup(name);
                if (!*section) {
                        (void) log_syntax(path, line, "Unknown section [%s], ignoring.", name);
                        return;
                }
                *state = SECTION_KNOWN;
                return;
        }

        eq = strchr(l, '=');
        if (!eq) {
                (void) log_syntax(path, line, "Missing '=' in '%s', ignoring.", l);
                return;
        }
        *eq = '\0';
        key = strstrip(l);
        value = strstrip(eq + 1);

        if (*state == SECTION_IGNORED)
                return;
        if (*key == '\0') {
                (void) log_syntax(path, line, "Missing key name before '=', ignoring.");
                return;
        }
        if (*state == SECTION_NONE) {
                (void) log_syntax(path, line, "Assignment to '%s' outside of any section, ignoring.", key);
                return;
        }

        for (size_t i = 0; i < ELEMENTSOF(config_items); i++) {
                const ConfigItem *item = config_items + i;

                if (!streq(item->section, *section) || !streq(item->key, key))
                        continue;

                if (*value == '\0') {
                        (void) log_syntax(path, line, "Empty value for %s=, ignoring.", key);
                        return;
                }
                config_assign(path, line, item, value, c);
                return;
        }

        (void) log_syntax(path, line, "Unknown key '%s' in section [%s], ignoring.", key, *section);
}

/* The longest line read, without its newline. A longer one is skipped with a warning and not kept in
 * memory: no setting needs it, and a file of one 2 GiB line must not be held whole. */
#define CONF_LINE_MAX 4096

/* Reads one line into buf (NUL-terminated, without its newline). Returns its length, or -1 at the end of
 * the file or on a read error (see ferror()). *too_long: it had more than CONF_LINE_MAX bytes (the rest
 * was read and dropped); *nul: it held a NUL byte. */
static ssize_t conf_read_line(FILE *f, char buf[static CONF_LINE_MAX + 1], bool *too_long, bool *nul) {
        size_t n = 0;
        bool any = false;
        int ch;

        *too_long = *nul = false;
        while ((ch = getc(f)) != EOF) {
                any = true;
                if (ch == '\n')
                        break;
                if (ch == 0)
                        *nul = true;
                if (n < CONF_LINE_MAX)
                        buf[n++] = (char) ch;
                else
                        *too_long = true;
        }
        buf[n] = 0;
        return any ? (ssize_t) n : -1;
}

/* Returns 0 when the file was parsed or is missing, -ENOMEM on allocation failure, or another negative
 * errno (already logged) when it could not be read. Only a regular file is read: a FIFO would block the
 * daemon, a device like /dev/zero never ends; a link to /dev/null masks the file, as with systemd. */
static int config_parse_file(Config *c, const char *path, bool missing_ok) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *buf = NULL;
        const char *section = NULL;
        SectionState state = SECTION_NONE;
        unsigned line = 0;
        struct stat st;
        int fd, r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                r = negative_errno();
                if (r == -ENOENT && missing_ok)
                        return 0;
                if (r == -ENOMEM)
                        return r;
                return log_warning_errno(r, "Failed to open configuration file '%s', ignoring: %m", path);
        }
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                (void) close(fd);
                return log_warning_errno(r, "Failed to stat configuration file '%s', ignoring: %m", path);
        }
        if (!S_ISREG(st.st_mode)) {
                (void) close(fd);
                if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))
                        return 0;
                if (S_ISDIR(st.st_mode))
                        return log_warning_errno(SYNTHETIC_ERRNO(EISDIR),
                                                 "Failed to read configuration file '%s', ignoring: %m", path);
                return log_warning_errno(SYNTHETIC_ERRNO(EINVAL),
                                         "Configuration file '%s' is not a regular file, ignoring.", path);
        }
        f = fdopen(fd, "r");
        if (!f) {
                r = negative_errno();
                (void) close(fd);
                return r == -ENOMEM ? r : log_warning_errno(r, "Failed to read configuration file '%s', ignoring: %m", path);
        }
        buf = malloc(CONF_LINE_MAX + 1);
        if (!buf)
                return -ENOMEM;

        for (;;) {
                bool too_long, nul;
                ssize_t n;
                char *l;

                errno = 0;
                n = conf_read_line(f, buf, &too_long, &nul);
                if (n < 0) {
                        if (ferror(f)) {
                                r = negative_errno();
                                if (r == -ENOMEM)
                                        return r;
                                return log_warning_errno(r, "Failed to read configuration file '%s', ignoring the rest: %m",
                                                         path);
                        }
                        break;
                }
                line++;

                l = buf;
                if (line == 1 && strncmp(l, "\xef\xbb\xbf", 3) == 0)
                        l += 3; /* UTF-8 byte order mark */
                if (too_long) {
                        const char *t = l + strspn(l, " \t");
                        if (*t != '#' && *t != ';')     /* a long comment is still a comment */
                                (void) log_syntax(path, line, "Line longer than %u bytes, ignoring.", CONF_LINE_MAX);
                        continue;
                }
                if (nul) {
                        (void) log_syntax(path, line, "Line contains a NUL byte, ignoring.");
                        continue;
                }

                config_parse_line(path, line, l, &section, &state, c);
        }

        return 0;
}

static int dropin_filter(const struct dirent *de) {
        size_t n = strlen(de->d_name);

        /* Hidden files are editor and package manager leftovers; only "*.conf" counts. */
        return de->d_name[0] != '.' && n > strlen(".conf") && streq(de->d_name + n - strlen(".conf"), ".conf");
}

static int dropin_compare(const struct dirent **a, const struct dirent **b) {
        /* Plain byte order, independent of the locale (alphasort() uses strcoll()). */
        return strcmp((*a)->d_name, (*b)->d_name);
}

static void dirent_list_free(struct dirent **l, int n) {
        for (int i = 0; i < n; i++)
                free(l[i]);
        free(l);
}

static int config_parse_dropins(Config *c, const char *dir) {
        struct dirent **list = NULL;
        int n, r = 0;

        n = scandir(dir, &list, dropin_filter, dropin_compare);
        if (n < 0) {
                r = negative_errno();
                if (r == -ENOENT)
                        return 0;
                if (r == -ENOMEM)
                        return r;
                (void) log_warning_errno(r, "Failed to read configuration directory '%s', ignoring: %m", dir);
                return 0;
        }

        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                struct stat st;

                if (asprintf(&path, "%s/%s", dir, list[i]->d_name) < 0) {
                        path = NULL;
                        r = -ENOMEM;
                        break;
                }

                if (stat(path, &st) < 0) {
                        if (errno == ENOENT)
                                continue; /* dangling symlink or removed meanwhile */
                        (void) log_warning_errno(negative_errno(),
                                                 "Failed to stat configuration file '%s', ignoring: %m", path);
                        continue;
                }
                /* A symlink to /dev/null masks a file, as with systemd's drop-ins. */
                if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))
                        continue;
                if (!S_ISREG(st.st_mode)) {
                        log_debug("Skipping '%s': not a regular file.", path);
                        continue;
                }

                r = config_parse_file(c, path, /* missing_ok= */ true);
                if (r == -ENOMEM)
                        break;
                r = 0;
        }

        dirent_list_free(list, n);
        return r;
}

int config_load(Config *c, const char *main_path, const char *dropin_dir) {
        int r;

        if (main_path) {
                r = config_parse_file(c, main_path, /* missing_ok= */ true);
                if (r == -ENOMEM)
                        return log_error_errno(r, "Failed to load configuration: %m");
        }

        if (dropin_dir) {
                r = config_parse_dropins(c, dropin_dir);
                if (r == -ENOMEM)
                        return log_error_errno(r, "Failed to load configuration: %m");
        }

        return 0;
}
