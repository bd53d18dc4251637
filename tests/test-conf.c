/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/conf.h"
#include "common/macro.h"
#include "test-util.h"


static char tmpdir[] = "/tmp/test-conf-XXXXXX";



/* Runs config_load() with stderr redirected to a file and returns everything it printed. */
static char *load_capture(Config *c, const char *main_path, const char *dropin_dir, int *ret) {
        char cap[] = "/tmp/test-conf-stderr-XXXXXX";
        _cleanup_fclose_ FILE *f = NULL;
        char *out = NULL;
        size_t n = 0;
        int fd, saved;

        fd = mkstemp(cap);
        ASSERT_TRUE(fd >= 0);
        fflush(stderr);
        saved = dup(STDERR_FILENO);
        ASSERT_TRUE(saved >= 0);
        ASSERT_TRUE(dup2(fd, STDERR_FILENO) >= 0);

        *ret = config_load(c, main_path, dropin_dir);

        fflush(stderr);
        ASSERT_TRUE(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);

        ASSERT_TRUE(lseek(fd, 0, SEEK_SET) == 0);
        f = fdopen(fd, "r");
        ASSERT_TRUE(f);
        out = calloc(1, 1);
        ASSERT_TRUE(out);
        for (;;) {
                char chunk[4096];
                size_t k = fread(chunk, 1, sizeof chunk, f);
                char *t;

                if (k == 0)
                        break;
                t = realloc(out, n + k + 1);
                ASSERT_TRUE(t);
                out = t;
                memcpy(out + n, chunk, k);
                n += k;
                out[n] = '\0';
        }
        (void) unlink(cap);

        /* Echo it, so a failing test shows what was logged. */
        fputs(out, stderr);
        return out;
}

static unsigned count_lines(const char *s) {
        unsigned n = 0;

        for (; *s; s++)
                if (*s == '\n')
                        n++;
        return n;
}

/* Asserts that some line of the log contains both "path:line:" and needle. */
static void assert_warned(const char *log, const char *path, unsigned line, const char *needle) {
        char prefix[PATH_MAX + 32];
        size_t plen;

        plen = (size_t) snprintf(prefix, sizeof prefix, "%s:%u: ", path, line);
        for (const char *l = log; *l; ) {
                const char *e = strchr(l, '\n') ?: l + strlen(l);

                if (strncmp(l, prefix, plen) == 0) {
                        char *one = strndup(l, (size_t) (e - l));
                        bool ok;

                        ASSERT_TRUE(one);
                        ok = strstr(one, needle) && strstr(one, ", ignoring.");
                        free(one);
                        if (ok)
                                return;
                }
                l = *e ? e + 1 : e;
        }
        fprintf(stderr, "expected a warning \"%s\" containing \"%s\" in:\n%s", prefix, needle, log);
        ASSERT_TRUE(false);
}

static void assert_defaults(const Config *c) {
        ASSERT_EQ(c->boot_tail_usec, 30 * USEC_PER_SEC);
        ASSERT_EQ(c->boot_window_usec, 120 * USEC_PER_SEC);
        ASSERT_EQ(c->launch_window_usec, 10 * USEC_PER_SEC);
        ASSERT_EQ(c->max_launches_per_boot, 3);
        ASSERT_EQ(c->min_launch_files, 2);
        ASSERT_EQ(c->keep_boots, 10);
        ASSERT_EQ(c->keep_launches, 5);
        ASSERT_EQ(c->max_profiles, 512);
        ASSERT_EQ(c->max_profiles_per_user, 64);
        ASSERT_EQ(c->max_session_files, 65536);
        ASSERT_TRUE(c->boot_user_share == 25.0);
        ASSERT_EQ(c->idle_usec, 300 * USEC_PER_SEC);
        ASSERT_EQ(c->min_interval_hours, 24);
        ASSERT_EQ(c->boot_quiet_usec, 600 * USEC_PER_SEC);
        ASSERT_TRUE(c->max_io_pressure == 10.0);
        ASSERT_TRUE(c->max_load_per_cpu == 0.5);
        ASSERT_TRUE(c->max_quality_loss_percent == 25.0);
        ASSERT_TRUE(!c->optimize_non_rotational);
        ASSERT_TRUE(c->make_room);
}

static void assert_sec(const char *s, uint64_t expected) {
        uint64_t v = 0;
        int r = config_parse_sec(s, &v);

        if (r < 0 || v != expected) {
                fprintf(stderr, "config_parse_sec(\"%s\") = %d, %llu; expected %llu\n", s, r,
                        (unsigned long long) v, (unsigned long long) expected);
                ASSERT_TRUE(false);
        }
}

static void assert_sec_fails(const char *s, int err) {
        uint64_t v = 4711;
        int r = config_parse_sec(s, &v);

        if (r != -err || v != 4711) {
                fprintf(stderr, "config_parse_sec(\"%s\") = %d, %llu; expected -%s, untouched\n", s, r,
                        (unsigned long long) v, strerror(err));
                ASSERT_TRUE(false);
        }
}

TEST(parse_sec) {
        assert_sec("30", 30 * USEC_PER_SEC);
        assert_sec("0", 0);
        assert_sec("30s", 30 * USEC_PER_SEC);
        assert_sec("30 s", 30 * USEC_PER_SEC);
        assert_sec("30sec", 30 * USEC_PER_SEC);
        assert_sec("500ms", 500 * USEC_PER_MSEC);
        assert_sec("7us", 7);
        assert_sec("2m", 2 * USEC_PER_MINUTE);
        assert_sec("2min", 2 * USEC_PER_MINUTE);
        assert_sec("1h", USEC_PER_HOUR);
        assert_sec("1hr", USEC_PER_HOUR);
        assert_sec("1d", USEC_PER_DAY);
        assert_sec("1.5s", 1500 * USEC_PER_MSEC);
        assert_sec("1.5", 1500 * USEC_PER_MSEC);
        assert_sec("0.25 min", 15 * USEC_PER_SEC);
        assert_sec(".5s", 500 * USEC_PER_MSEC);
        assert_sec("1.5us", 1);
        assert_sec("0.000001", 1);
        assert_sec("1.0000000001s", USEC_PER_SEC);
        assert_sec("0.999999999d", USEC_PER_DAY - 87);
        assert_sec("007", 7 * USEC_PER_SEC);
        assert_sec("18446744073709551615us", UINT64_MAX);

        assert_sec_fails("", EINVAL);
        assert_sec_fails("s", EINVAL);
        assert_sec_fails("abc", EINVAL);
        assert_sec_fails("-1", EINVAL);
        assert_sec_fails("-1s", EINVAL);
        assert_sec_fails("+1", EINVAL);
        assert_sec_fails(" 1", EINVAL);
        assert_sec_fails("1 ", EINVAL);
        assert_sec_fails("1  s", EINVAL);
        assert_sec_fails("1x", EINVAL);
        assert_sec_fails("1 secs", EINVAL);
        assert_sec_fails("1S", EINVAL);
        assert_sec_fails("1.", EINVAL);
        assert_sec_fails(".", EINVAL);
        assert_sec_fails("1.2.3", EINVAL);
        assert_sec_fails("1e3", EINVAL);
        assert_sec_fails("0x10", EINVAL);
        assert_sec_fails("1s 2s", EINVAL);
        assert_sec_fails("18446744073709551616us", ERANGE);
        assert_sec_fails("99999999999999999999999", ERANGE);
        assert_sec_fails("18446744073709551615", ERANGE);
        assert_sec_fails("213503983d", ERANGE);
        assert_sec("213503982d", 213503982 * USEC_PER_DAY);

        ASSERT_ERROR(config_parse_sec(NULL, &(uint64_t) { 0 }), EINVAL);
}

TEST(parse_unsigned) {
        unsigned u = 4711;

        ASSERT_OK(config_parse_unsigned("0", 0, 1000, &u));
        ASSERT_EQ(u, 0);
        ASSERT_OK(config_parse_unsigned("1000", 0, 1000, &u));
        ASSERT_EQ(u, 1000);
        ASSERT_OK(config_parse_unsigned("042", 0, 1000, &u));
        ASSERT_EQ(u, 42);
        ASSERT_OK(config_parse_unsigned("4294967295", 0, UINT_MAX, &u));
        ASSERT_EQ(u, UINT_MAX);

        u = 4711;
        ASSERT_ERROR(config_parse_unsigned("1001", 0, 1000, &u), ERANGE);
        ASSERT_ERROR(config_parse_unsigned("0", 1, 1000, &u), ERANGE);
        ASSERT_ERROR(config_parse_unsigned("4294967296", 0, UINT_MAX, &u), ERANGE);
        ASSERT_ERROR(config_parse_unsigned("99999999999999999999999", 0, UINT_MAX, &u), ERANGE);
        ASSERT_ERROR(config_parse_unsigned("", 0, 1000, &u), EINVAL);
        ASSERT_ERROR(config_parse_unsigned("abc", 0, 1000, &u), EINVAL);
        ASSERT_ERROR(config_parse_unsigned("-1", 0, 1000, &u), EINVAL);
        ASSERT_ERROR(config_parse_unsigned("+1", 0, 1000, &u), EINVAL);
        ASSERT_ERROR(config_parse_unsigned(" 1", 0, 1000, &u), EINVAL);
        ASSERT_ERROR(config_parse_unsigned("1 ", 0, 1000, &u), EINVAL);
        ASSERT_ERROR(config_parse_unsigned("1.5", 0, 1000, &u), EINVAL);
        ASSERT_ERROR(config_parse_unsigned("0x10", 0, 1000, &u), EINVAL);
        ASSERT_ERROR(config_parse_unsigned("99999999999999999999x", 0, UINT_MAX, &u), EINVAL);
        ASSERT_ERROR(config_parse_unsigned(NULL, 0, 1000, &u), EINVAL);
        ASSERT_EQ(u, 4711);
}

TEST(parse_double) {
        double d = 4711;

        ASSERT_OK(config_parse_double("0.5", 0, 1000, &d));
        ASSERT_TRUE(d == 0.5);
        ASSERT_OK(config_parse_double("10", 0, 1000, &d));
        ASSERT_TRUE(d == 10);
        ASSERT_OK(config_parse_double(".25", 0, 1000, &d));
        ASSERT_TRUE(d == 0.25);
        ASSERT_OK(config_parse_double("0", 0, 1000, &d));
        ASSERT_TRUE(d == 0);
        ASSERT_OK(config_parse_double("1000.0", 0, 1000, &d));
        ASSERT_TRUE(d == 1000);

        d = 4711;
        ASSERT_ERROR(config_parse_double("1000.01", 0, 1000, &d), ERANGE);
        ASSERT_ERROR(config_parse_double("0.5", 1, 1000, &d), ERANGE);
        ASSERT_ERROR(config_parse_double("9999999999999999999999999999999999999999999999999999999999999999"
                                         "9999999999999999999999999999999999999999999999999999999999999999"
                                         "9999999999999999999999999999999999999999999999999999999999999999"
                                         "9999999999999999999999999999999999999999999999999999999999999999"
                                         "9999999999999999999999999999999999999999999999999999999999999999", 0, 1000, &d),
                     ERANGE);
        ASSERT_ERROR(config_parse_double("", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double(".", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double("1.", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double("-1", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double("+1", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double(" 1", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double("1 ", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double("1e3", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double("0,5", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double("inf", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double("nan", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double("0x1", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double("1.2.3", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double("5%", 0, 1000, &d), EINVAL);
        ASSERT_ERROR(config_parse_double(NULL, 0, 1000, &d), EINVAL);
        ASSERT_TRUE(d == 4711);

        ASSERT_OK(config_parse_percent("10", 0, 100, &d));
        ASSERT_TRUE(d == 10);
        ASSERT_OK(config_parse_percent("2.5%", 0, 100, &d));
        ASSERT_TRUE(d == 2.5);
        ASSERT_OK(config_parse_percent("100%", 0, 100, &d));
        ASSERT_TRUE(d == 100);
        d = 4711;
        ASSERT_ERROR(config_parse_percent("100.5%", 0, 100, &d), ERANGE);
        ASSERT_ERROR(config_parse_percent("%", 0, 100, &d), EINVAL);
        ASSERT_ERROR(config_parse_percent("5%%", 0, 100, &d), EINVAL);
        ASSERT_ERROR(config_parse_percent("5 %", 0, 100, &d), EINVAL);
        ASSERT_ERROR(config_parse_percent("%5", 0, 100, &d), EINVAL);
        ASSERT_ERROR(config_parse_percent("", 0, 100, &d), EINVAL);
        ASSERT_ERROR(config_parse_percent(NULL, 0, 100, &d), EINVAL);
        ASSERT_TRUE(d == 4711);
}

TEST(parse_bool) {
        static const char *const yes[] = { "yes", "YES", "Yes", "y", "true", "True", "t", "on", "ON", "1" };
        static const char *const no[] = { "no", "NO", "n", "false", "FALSE", "f", "off", "Off", "0" };
        static const char *const bad[] = { "", "2", "yess", "enable", " yes", "yes ", "00", "-1" };
        bool b;

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                b = false;
                ASSERT_OK(config_parse_bool(yes[i], &b));
                ASSERT_TRUE(b);
        }
        for (size_t i = 0; i < ELEMENTSOF(no); i++) {
                b = true;
                ASSERT_OK(config_parse_bool(no[i], &b));
                ASSERT_TRUE(!b);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                b = true;
                ASSERT_ERROR(config_parse_bool(bad[i], &b), EINVAL);
                ASSERT_TRUE(b);
        }
        ASSERT_ERROR(config_parse_bool(NULL, &b), EINVAL);
}

TEST(defaults) {
        Config c;

        memset(&c, 0xff, sizeof c);
        config_set_defaults(&c);
        assert_defaults(&c);
}

TEST(full_file) {
        _cleanup_free_ char *log = NULL;
        const char *p = test_path(tmpdir, "full.conf");
        Config c;
        int r;

        test_write_file(p,
                   "# seekless.conf\n"
                   "[Record]\n"
                   "BootTailSec=45s\n"
                   "BootWindowSec=3min\n"
                   "LaunchWindowSec=2.5\n"
                   "MaxLaunchesPerBoot=0\n"
                   "MinLaunchFiles=100000\n"
                   "KeepBoots=1000\n"
                   "KeepLaunches=1\n");
        config_set_defaults(&c);
        log = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        ASSERT_STREQ(log, "");
        ASSERT_EQ(c.boot_tail_usec, 45 * USEC_PER_SEC);
        ASSERT_EQ(c.boot_window_usec, 3 * USEC_PER_MINUTE);
        ASSERT_EQ(c.launch_window_usec, 2500 * USEC_PER_MSEC);
        ASSERT_EQ(c.max_launches_per_boot, 0);
        ASSERT_EQ(c.min_launch_files, 100000);
        ASSERT_EQ(c.keep_boots, 1000);
        ASSERT_EQ(c.keep_launches, 1);
}

TEST(bad_values) {
        _cleanup_free_ char *log = NULL;
        const char *p = test_path(tmpdir, "bad.conf");
        Config c;
        int r;

        test_write_file(p,
                   "[Record]\n"
                   "BootTailSec=-5\n"                  /* 2 */
                   "BootWindowSec=0\n"                 /* 3: must be > 0 */
                   "LaunchWindowSec=2d\n"              /* 4: > 1 day */
                   "MaxLaunchesPerBoot=abc\n"          /* 5 */
                   "MinLaunchFiles=0\n"                /* 6 */
                   "KeepBoots=1001\n"                  /* 7 */
                   "KeepLaunches=\n"                   /* 8 */
                   "BootTailSec=99999999999999999999\n" /* 9 */
                   "MaxLaunchesPerBoot=5 # comment\n"  /* 10 */
                   "BootTailSec=0\n");                 /* 11: fine, 0 allowed here */
        config_set_defaults(&c);
        log = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        ASSERT_EQ(c.boot_tail_usec, 0);
        c.boot_tail_usec = 30 * USEC_PER_SEC;
        assert_defaults(&c);

        assert_warned(log, p, 2, "Invalid value for BootTailSec=: '-5'");
        assert_warned(log, p, 3, "BootWindowSec=: '0'");
        assert_warned(log, p, 4, "Value out of range for LaunchWindowSec=: '2d'");
        assert_warned(log, p, 5, "Invalid value for MaxLaunchesPerBoot=: 'abc' (expected an integer 0..1000)");
        assert_warned(log, p, 6, "Value out of range for MinLaunchFiles=: '0' (expected an integer 1..100000)");
        assert_warned(log, p, 7, "KeepBoots=: '1001'");
        assert_warned(log, p, 8, "Empty value for KeepLaunches=");
        assert_warned(log, p, 9, "BootTailSec=: '99999999999999999999'");
        assert_warned(log, p, 10, "MaxLaunchesPerBoot=: '5 # comment'");
        ASSERT_EQ(count_lines(log), 9);
}

/* The caps on the database: limits and defaults; a bad value warns and leaves the default. */
TEST(record_caps) {
        _cleanup_free_ char *log = NULL;
        const char *p = test_path(tmpdir, "caps.conf");
        Config c;
        int r;

        test_write_file(p,
                   "[Record]\n"
                   "MaxProfiles=1\n"
                   "MaxProfilesPerUser=100000\n"
                   "MaxSessionFiles=1000000\n"
                   "BootUserShare=12.5%\n");
        config_set_defaults(&c);
        log = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        ASSERT_STREQ(log, "");
        ASSERT_EQ(c.max_profiles, 1);
        ASSERT_EQ(c.max_profiles_per_user, 100000);
        ASSERT_EQ(c.max_session_files, 1000000);
        ASSERT_TRUE(c.boot_user_share == 12.5);
        free(log);

        test_write_file(p,
                   "[Record]\n"
                   "MaxProfiles=0\n"                  /* 2: at least one */
                   "MaxProfiles=100001\n"             /* 3 */
                   "MaxProfilesPerUser=-1\n"          /* 4 */
                   "MaxProfilesPerUser=0\n"           /* 5 */
                   "MaxSessionFiles=1000001\n"        /* 6 */
                   "MaxSessionFiles=64k\n"            /* 7 */
                   "MaxSessionFiles=\n"               /* 8 */
                   "BootUserShare=101\n"              /* 9 */
                   "BootUserShare=-5\n");             /* 10 */
        config_set_defaults(&c);
        log = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        assert_defaults(&c);
        assert_warned(log, p, 2, "Value out of range for MaxProfiles=: '0' (expected an integer 1..100000)");
        assert_warned(log, p, 3, "Value out of range for MaxProfiles=: '100001'");
        assert_warned(log, p, 4, "Invalid value for MaxProfilesPerUser=: '-1' (expected an integer 1..100000)");
        assert_warned(log, p, 5, "Value out of range for MaxProfilesPerUser=: '0'");
        assert_warned(log, p, 6, "Value out of range for MaxSessionFiles=: '1000001' (expected an integer 1..1000000)");
        assert_warned(log, p, 7, "Invalid value for MaxSessionFiles=: '64k'");
        assert_warned(log, p, 8, "Empty value for MaxSessionFiles=");
        assert_warned(log, p, 9, "Value out of range for BootUserShare=: '101' (expected a percentage 0..100");
        assert_warned(log, p, 10, "Invalid value for BootUserShare=: '-5'");
        ASSERT_EQ(count_lines(log), 9);
}

TEST(recorder) {
        _cleanup_free_ char *log = NULL;
        const char *p = test_path(tmpdir, "recorder.conf");
        Config c;
        int r;

        config_set_defaults(&c);
        ASSERT_EQ(c.recorder, RECORDER_AUTO);
        for (RecorderKind k = 0; k < _RECORDER_KIND_MAX; k++) {
                _cleanup_free_ char *text = NULL, *l = NULL;

                ASSERT_EQ(recorder_kind_from_string(recorder_kind_to_string(k)), k);
                ASSERT_TRUE(asprintf(&text, "[Record]\nRecorder=%s\n", recorder_kind_to_string(k)) > 0);
                test_write_file(p, text);
                config_set_defaults(&c);
                l = load_capture(&c, p, NULL, &r);
                ASSERT_OK(r);
                ASSERT_STREQ(l, "");
                ASSERT_EQ(c.recorder, k);
        }

        /* a bad value warns and keeps what was set before */
        test_write_file(p,
                   "[Record]\n"
                   "Recorder=bpf\n"
                   "Recorder=BPF\n"                  /* 3: case matters, as for every name */
                   "Recorder=\n");                   /* 4 */
        config_set_defaults(&c);
        log = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        ASSERT_EQ(c.recorder, RECORDER_BPF);
        assert_warned(log, p, 3, "Invalid value for Recorder=: 'BPF' (expected auto, bpf or fanotify), ignoring.");
        assert_warned(log, p, 4, "Empty value for Recorder=");
        ASSERT_EQ(count_lines(log), 2);
}

TEST(bad_values_keep_previous) {
        _cleanup_free_ char *log = NULL;
        const char *p = test_path(tmpdir, "prev.conf");
        Config c;
        int r;

        /* A bad value keeps whatever was set before, not the built-in default. */
        test_write_file(p,
                   "[Record]\n"
                   "KeepBoots=7\n"
                   "KeepBoots=seven\n");
        config_set_defaults(&c);
        log = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        ASSERT_EQ(c.keep_boots, 7);
        assert_warned(log, p, 3, "KeepBoots=: 'seven'");
}

TEST(unknown_key) {
        _cleanup_free_ char *log = NULL;
        const char *p = test_path(tmpdir, "unknown-key.conf");
        Config c;
        int r;

        test_write_file(p,
                   "[Record]\n"
                   "KeepBoots=4\n"
                   "Foo=bar\n"
                   "keepboots=9\n"
                   "KeepLaunches=6\n");
        config_set_defaults(&c);
        log = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        ASSERT_EQ(c.keep_boots, 4);
        ASSERT_EQ(c.keep_launches, 6);
        assert_warned(log, p, 3, "Unknown key 'Foo' in section [Record], ignoring.");
        assert_warned(log, p, 4, "Unknown key 'keepboots' in section [Record]");
        ASSERT_EQ(count_lines(log), 2);
}

TEST(unknown_section) {
        _cleanup_free_ char *log = NULL;
        const char *p = test_path(tmpdir, "unknown-section.conf");
        Config c;
        int r;

        test_write_file(p,
                   "[Frobnicate]\n"                    /* 1 */
                   "Foo=1\n"
                   "KeepBoots=99\n"                    /* not applied: wrong section */
                   "[Record]\n"
                   "KeepBoots=8\n"                     /* 5 */
                   "[Frobnicate2]\n"                   /* 6 */
                   "Bar=2\n"
                   "Baz=\n"
                   "[Record\n"                         /* 9: unterminated */
                   "KeepLaunches=99\n"                 /* skipped, header was bad */
                   "[Record]\n"
                   "KeepLaunches=4\n");
        config_set_defaults(&c);
        log = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        ASSERT_EQ(c.keep_boots, 8);
        ASSERT_EQ(c.keep_launches, 4);
        assert_warned(log, p, 1, "Unknown section [Frobnicate], ignoring.");
        assert_warned(log, p, 6, "Unknown section [Frobnicate2], ignoring.");
        assert_warned(log, p, 9, "'[Record'");
        /* one warning per header, none for the keys below them */
        ASSERT_EQ(count_lines(log), 3);
}

TEST(optimize_section) {
        _cleanup_free_ char *log = NULL;
        const char *p = test_path(tmpdir, "optimize.conf");
        Config c;
        int r;

        test_write_file(p,
                   "[Optimize]\n"
                   "MaxHotSetMiB=256\n"
                   "MaxFileMiB=0\n"                     /* 3: below the minimum */
                   "MinFileAgeSec=5min\n"
                   "RateLimitMiBps=20\n"
                   "MakeRoom=no\n"
                   "MakeRoom=sometimes\n");            /* 7: not a boolean, ignored */
        config_set_defaults(&c);
        ASSERT_EQ(c.max_hot_set_mib, 1024);
        ASSERT_EQ(c.max_file_mib, 512);
        ASSERT_EQ(c.min_file_age_usec, 600 * USEC_PER_SEC);
        ASSERT_EQ(c.rate_limit_mibps, 0);
        log = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        ASSERT_EQ(c.max_hot_set_mib, 256);
        ASSERT_EQ(c.max_file_mib, 512);
        ASSERT_EQ(c.min_file_age_usec, 300 * USEC_PER_SEC);
        ASSERT_EQ(c.rate_limit_mibps, 20);
        ASSERT_TRUE(!c.make_room);
        assert_warned(log, p, 3, "MaxFileMiB=");
        assert_warned(log, p, 7, "Invalid value for MakeRoom=: 'sometimes' (expected a boolean: yes or no)");
        ASSERT_EQ(count_lines(log), 2);
}

TEST(idle_section) {
        _cleanup_free_ char *log = NULL, *log2 = NULL;
        const char *p = test_path(tmpdir, "idle.conf"), *p2 = test_path(tmpdir, "idle-bad.conf");
        Config c;
        int r;

        test_write_file(p,
                   "[Idle]\n"
                   "IdleSec=2min\n"
                   "MinIntervalHours=0\n"
                   "BootQuietSec=0\n"
                   "MaxIOPressure=2.5%\n"
                   "MaxLoadPerCPU=0.75\n"
                   "MaxQualityLossPercent=40%\n"
                   "OptimizeNonRotational=yes\n");
        config_set_defaults(&c);
        log = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        ASSERT_STREQ(log, "");
        ASSERT_EQ(c.idle_usec, 2 * USEC_PER_MINUTE);
        ASSERT_EQ(c.min_interval_hours, 0);
        ASSERT_EQ(c.boot_quiet_usec, 0);
        ASSERT_TRUE(c.max_io_pressure == 2.5);
        ASSERT_TRUE(c.max_load_per_cpu == 0.75);
        ASSERT_TRUE(c.max_quality_loss_percent == 40.0);
        ASSERT_TRUE(c.optimize_non_rotational);

        test_write_file(p2,
                   "[Idle]\n"
                   "IdleSec=-1\n"                       /* 2 */
                   "IdleSec=2d\n"                       /* 3: > 1 day */
                   "MinIntervalHours=8761\n"            /* 4 */
                   "MinIntervalHours=1.5\n"             /* 5 */
                   "BootQuietSec=soon\n"                /* 6 */
                   "MaxIOPressure=101\n"                /* 7 */
                   "MaxIOPressure=-1\n"                 /* 8 */
                   "MaxIOPressure=ten\n"                /* 9 */
                   "MaxLoadPerCPU=1001\n"               /* 10 */
                   "MaxLoadPerCPU=0,5\n"                /* 11 */
                   "OptimizeNonRotational=maybe\n"      /* 12 */
                   "OptimizeNonRotational=\n"           /* 13 */
                   "IdleSeconds=5\n"                    /* 14 */
                   "MinIntervalHours=8760\n"            /* 15: fine */
                   "MaxIOPressure=100%\n"               /* 16: fine */
                   "MaxLoadPerCPU=0\n"                  /* 17: fine */
                   "OptimizeNonRotational=off\n"        /* 18: fine */
                   "MaxQualityLossPercent=10001\n"      /* 19 */
                   "MaxQualityLossPercent=-5\n"         /* 20 */
                   "MaxQualityLossPercent=0\n");        /* 21: fine, turns the trigger off */
        config_set_defaults(&c);
        c.optimize_non_rotational = true;
        log2 = load_capture(&c, p2, NULL, &r);
        ASSERT_OK(r);
        ASSERT_EQ(c.idle_usec, 300 * USEC_PER_SEC);
        ASSERT_EQ(c.boot_quiet_usec, 600 * USEC_PER_SEC);
        ASSERT_EQ(c.min_interval_hours, 8760);
        ASSERT_TRUE(c.max_io_pressure == 100);
        ASSERT_TRUE(c.max_load_per_cpu == 0);
        ASSERT_TRUE(!c.optimize_non_rotational);
        ASSERT_TRUE(c.max_quality_loss_percent == 0);
        assert_warned(log2, p2, 2, "Invalid value for IdleSec=: '-1'");
        assert_warned(log2, p2, 3, "Value out of range for IdleSec=: '2d'");
        assert_warned(log2, p2, 4, "Value out of range for MinIntervalHours=: '8761' (expected a number of hours 0..8760)");
        assert_warned(log2, p2, 5, "Invalid value for MinIntervalHours=: '1.5'");
        assert_warned(log2, p2, 6, "Invalid value for BootQuietSec=: 'soon'");
        assert_warned(log2, p2, 7, "Value out of range for MaxIOPressure=: '101' (expected a percentage 0..100");
        assert_warned(log2, p2, 8, "Invalid value for MaxIOPressure=: '-1'");
        assert_warned(log2, p2, 9, "Invalid value for MaxIOPressure=: 'ten'");
        assert_warned(log2, p2, 10, "Value out of range for MaxLoadPerCPU=: '1001' (expected a decimal number 0..1000");
        assert_warned(log2, p2, 11, "Invalid value for MaxLoadPerCPU=: '0,5'");
        assert_warned(log2, p2, 12, "Invalid value for OptimizeNonRotational=: 'maybe' (expected a boolean: yes or no)");
        assert_warned(log2, p2, 13, "Empty value for OptimizeNonRotational=");
        assert_warned(log2, p2, 14, "Unknown key 'IdleSeconds' in section [Idle]");
        assert_warned(log2, p2, 19,
                      "Value out of range for MaxQualityLossPercent=: '10001' (expected a percentage 0..10000");
        assert_warned(log2, p2, 20, "Invalid value for MaxQualityLossPercent=: '-5'");
        ASSERT_EQ(count_lines(log2), 15);
}

TEST(bad_lines) {
        _cleanup_free_ char *log = NULL;
        const char *p = test_path(tmpdir, "bad-lines.conf");
        Config c;
        int r;

        test_write_file(p,
                   "KeepBoots=3\n"                     /* 1: outside any section */
                   "[Record]\n"
                   "KeepBoots\n"                       /* 3: no '=' */
                   "=5\n"                              /* 4: no key */
                   "[]\n"                              /* 5 */
                   "[Record]\n"
                   "KeepLaunches=9\n");
        config_set_defaults(&c);
        log = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        ASSERT_EQ(c.keep_boots, 10);
        ASSERT_EQ(c.keep_launches, 9);
        assert_warned(log, p, 1, "KeepBoots");
        assert_warned(log, p, 1, "outside of any section");
        assert_warned(log, p, 3, "Missing '='");
        assert_warned(log, p, 4, "Missing key name");
        assert_warned(log, p, 5, "Invalid section header");
        ASSERT_EQ(count_lines(log), 4);
}

TEST(comments_whitespace) {
        _cleanup_free_ char *log = NULL;
        _cleanup_free_ char *longline = NULL;
        const char *p = test_path(tmpdir, "ws.conf");
        _cleanup_fclose_ FILE *f = NULL;
        Config c;
        int r;

        f = fopen(p, "we");
        ASSERT_TRUE(f);
        fputs("\xef\xbb\xbf# leading byte order mark\n"
              "; semicolon comment\n"
              "   # indented comment\n"
              "\n"
              "  \t \n"
              "  [Record]  \r\n"
              "  BootTailSec  =   1 min  \n"
              "\tKeepBoots\t=\t12\t\n"
              "LaunchWindowSec=500 ms\r\n"
              "#KeepLaunches=1\n"
              ";KeepLaunches=1\n", f);
        /* a very long comment line, then a long value that must be reported in full */
        longline = malloc(100001);
        ASSERT_TRUE(longline);
        memset(longline, 'x', 100000);
        longline[100000] = '\0';
        fprintf(f, "# %s\n", longline);
        fputs("MinLaunchFiles=7", f); /* last line without a newline */
        ASSERT_TRUE(fclose(TAKE_PTR(f)) == 0);

        config_set_defaults(&c);
        log = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        ASSERT_STREQ(log, "");
        ASSERT_EQ(c.boot_tail_usec, USEC_PER_MINUTE);
        ASSERT_EQ(c.keep_boots, 12);
        ASSERT_EQ(c.launch_window_usec, 500 * USEC_PER_MSEC);
        ASSERT_EQ(c.keep_launches, 5);
        ASSERT_EQ(c.min_launch_files, 7);
}

TEST(dropin_order) {
        _cleanup_free_ char *log = NULL;
        char dir[PATH_MAX];
        Config c;
        int r;

        snprintf(dir, sizeof dir, "%s", test_path(tmpdir, "seekless.conf.d"));
        ASSERT_TRUE(mkdir(dir, 0755) == 0);

        test_write_file(test_path(tmpdir, "main.conf"),
                   "[Record]\n"
                   "KeepBoots=20\n"
                   "KeepLaunches=20\n"
                   "MinLaunchFiles=20\n"
                   "MaxLaunchesPerBoot=20\n");
        /* Written in reverse order so directory order is unlikely to match lexical order by accident. */
        test_write_file(test_path(tmpdir, "seekless.conf.d/20-b.conf"),
                   "[Record]\n"
                   "KeepLaunches=2\n"
                   "MinLaunchFiles=bad\n");
        test_write_file(test_path(tmpdir, "seekless.conf.d/10-a.conf"),
                   "[Record]\n"
                   "KeepBoots=1\n"
                   "KeepLaunches=1\n"
                   "MinLaunchFiles=1\n");
        test_write_file(test_path(tmpdir, "seekless.conf.d/30-c.conf.disabled"), "[Record]\nKeepBoots=999\n");
        test_write_file(test_path(tmpdir, "seekless.conf.d/.99-hidden.conf"), "[Record]\nKeepBoots=998\n");
        ASSERT_TRUE(mkdir(test_path(tmpdir, "seekless.conf.d/40-dir.conf"), 0755) == 0);
        ASSERT_TRUE(symlink("/dev/null", test_path(tmpdir, "seekless.conf.d/50-masked.conf")) == 0);
        ASSERT_TRUE(symlink("/nonexistent/seekless", test_path(tmpdir, "seekless.conf.d/60-dangling.conf")) == 0);

        config_set_defaults(&c);
        log = load_capture(&c, test_path(tmpdir, "main.conf"), dir, &r);
        ASSERT_OK(r);
        ASSERT_EQ(c.keep_boots, 1);           /* 10-a overrides main */
        ASSERT_EQ(c.keep_launches, 2);        /* 20-b overrides 10-a */
        ASSERT_EQ(c.min_launch_files, 1);     /* bad value in 20-b keeps 10-a's */
        ASSERT_EQ(c.max_launches_per_boot, 20); /* only main sets it */
        assert_warned(log, test_path(tmpdir, "seekless.conf.d/20-b.conf"), 3, "MinLaunchFiles=: 'bad'");
        ASSERT_EQ(count_lines(log), 1);
}

TEST(missing_files) {
        _cleanup_free_ char *log = NULL, *log2 = NULL;
        Config c;
        int r;

        config_set_defaults(&c);
        log = load_capture(&c, test_path(tmpdir, "does-not-exist.conf"), test_path(tmpdir, "does-not-exist.conf.d"), &r);
        ASSERT_OK(r);
        ASSERT_STREQ(log, "");
        assert_defaults(&c);

        /* Missing main file, drop-ins still apply. */
        ASSERT_TRUE(mkdir(test_path(tmpdir, "only-dropins.d"), 0755) == 0);
        test_write_file(test_path(tmpdir, "only-dropins.d/x.conf"), "[Record]\nKeepBoots=2\n");
        log2 = load_capture(&c, test_path(tmpdir, "does-not-exist.conf"), test_path(tmpdir, "only-dropins.d"), &r);
        ASSERT_OK(r);
        ASSERT_STREQ(log2, "");
        ASSERT_EQ(c.keep_boots, 2);

        config_set_defaults(&c);
        ASSERT_OK(config_load(&c, NULL, NULL));
        assert_defaults(&c);
}

/* The main file is read only when it is a regular file: a FIFO blocked the daemon forever (the code
 * before opened it without O_NONBLOCK, with SIGTERM blocked), /dev/zero was read until memory ran out. A
 * line longer than 4096 bytes is skipped with a warning, and not held in memory whole. */
TEST(hostile_files) {
        _cleanup_free_ char *log = NULL, *log2 = NULL, *log3 = NULL, *longline = NULL;
        const char *fifo = test_path(tmpdir, "fifo.conf"), *zero = test_path(tmpdir, "zero.conf");
        const char *p = test_path(tmpdir, "longline.conf");
        _cleanup_fclose_ FILE *f = NULL;
        Config c;
        int r;

        ASSERT_TRUE(mkfifo(fifo, 0600) == 0);
        config_set_defaults(&c);
        log = load_capture(&c, fifo, NULL, &r);        /* the test's timeout catches a hang */
        ASSERT_OK(r);
        ASSERT_TRUE(strstr(log, "is not a regular file, ignoring"));
        assert_defaults(&c);

        ASSERT_TRUE(symlink("/dev/zero", zero) == 0);
        log2 = load_capture(&c, zero, NULL, &r);
        ASSERT_OK(r);
        ASSERT_TRUE(strstr(log2, "is not a regular file, ignoring"));
        assert_defaults(&c);

        /* a 1 MB value: warned about (not echoed), the lines around it still read */
        longline = malloc(1000001);
        ASSERT_TRUE(longline);
        memset(longline, '7', 1000000);
        longline[1000000] = '\0';
        f = fopen(p, "we");
        ASSERT_TRUE(f);
        fprintf(f, "[Record]\nKeepLaunches=%s\nKeepBoots=4\n", longline);
        ASSERT_TRUE(fclose(TAKE_PTR(f)) == 0);
        log3 = load_capture(&c, p, NULL, &r);
        ASSERT_OK(r);
        assert_warned(log3, p, 2, "Line longer than 4096 bytes, ignoring.");
        ASSERT_TRUE(strlen(log3) < 1000);
        ASSERT_EQ(c.keep_launches, 5);
        ASSERT_EQ(c.keep_boots, 4);
}

TEST(unreadable_file) {
        _cleanup_free_ char *log = NULL;
        Config c;
        int r;

        /* A directory where the main file should be: warn naming the file, go on with the drop-ins. */
        ASSERT_TRUE(mkdir(test_path(tmpdir, "isdir.conf"), 0755) == 0);
        ASSERT_TRUE(mkdir(test_path(tmpdir, "isdir.conf.d"), 0755) == 0);
        test_write_file(test_path(tmpdir, "isdir.conf.d/a.conf"), "[Record]\nKeepLaunches=3\n");

        config_set_defaults(&c);
        log = load_capture(&c, test_path(tmpdir, "isdir.conf"), test_path(tmpdir, "isdir.conf.d"), &r);
        ASSERT_OK(r);
        ASSERT_TRUE(strstr(log, test_path(tmpdir, "isdir.conf")));
        ASSERT_TRUE(strstr(log, strerror(EISDIR)));
        ASSERT_EQ(c.keep_launches, 3);

        /* An open() error other than ENOENT, which also happens as root. */
        {
                _cleanup_free_ char *log2 = NULL;

                test_write_file(test_path(tmpdir, "plain.conf"), "[Record]\n");
                log2 = load_capture(&c, test_path(tmpdir, "plain.conf/sub.conf"), NULL, &r);
                ASSERT_OK(r);
                ASSERT_TRUE(strstr(log2, test_path(tmpdir, "plain.conf/sub.conf")));
                ASSERT_TRUE(strstr(log2, strerror(ENOTDIR)));

                /* a drop-in directory that is not a directory */
                free(log2);
                log2 = load_capture(&c, NULL, test_path(tmpdir, "plain.conf"), &r);
                ASSERT_OK(r);
                ASSERT_TRUE(strstr(log2, test_path(tmpdir, "plain.conf")));
                ASSERT_TRUE(strstr(log2, strerror(ENOTDIR)));
                ASSERT_EQ(c.keep_launches, 3);
        }

        /* Permission checks do not apply to root, so only test EACCES when they do. */
        if (geteuid() != 0) {
                _cleanup_free_ char *log2 = NULL;

                test_write_file(test_path(tmpdir, "noperm.conf"), "[Record]\nKeepLaunches=9\n");
                ASSERT_TRUE(chmod(test_path(tmpdir, "noperm.conf"), 0) == 0);
                log2 = load_capture(&c, test_path(tmpdir, "noperm.conf"), NULL, &r);
                ASSERT_OK(r);
                ASSERT_TRUE(strstr(log2, test_path(tmpdir, "noperm.conf")));
                ASSERT_TRUE(strstr(log2, strerror(EACCES)));
                ASSERT_EQ(c.keep_launches, 3);
        }
}

int main(void) {
        char cmd[PATH_MAX + 16];
        int r;

        ASSERT_TRUE(mkdtemp(tmpdir));

        RUN(parse_sec);
        RUN(parse_unsigned);
        RUN(parse_double);
        RUN(parse_bool);
        RUN(defaults);
        RUN(full_file);
        RUN(bad_values);
        RUN(record_caps);
        RUN(recorder);
        RUN(bad_values_keep_previous);
        RUN(unknown_key);
        RUN(unknown_section);
        RUN(optimize_section);
        RUN(idle_section);
        RUN(bad_lines);
        RUN(comments_whitespace);
        RUN(dropin_order);
        RUN(missing_files);
        RUN(hostile_files);
        RUN(unreadable_file);

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        r = system(cmd);
        return r == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
