/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "policy/idle.h"
#include "common/macro.h"
#include "common/time-util.h"
#include "test-util.h"

/* The table below overrides fields of a base initializer, which is what designated initializers allow. */
#pragma GCC diagnostic ignored "-Woverride-init"


static char tmpdir[] = "/tmp/test-idle-policy-XXXXXX";



/* mkdir -p for fixture trees. */
static void mkdir_p(const char *path) {
        char buf[PATH_MAX];

        snprintf(buf, sizeof buf, "%s", path);
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        ASSERT_TRUE(mkdir(buf, 0755) == 0 || errno == EEXIST);
                        *p = '/';
                }
        ASSERT_TRUE(mkdir(buf, 0755) == 0 || errno == EEXIST);
}

/* Creates <tmpdir>/<dir>/<name>/ with attribute files from "key=value" strings, NULL-terminated. Values
 * get a trailing newline, as sysfs has. */
static void make_supply(const char *dir, const char *name, ...) {
        char d[PATH_MAX], p[PATH_MAX + 64];
        va_list ap;

        snprintf(d, sizeof d, "%s/%s/%s", tmpdir, dir, name);
        mkdir_p(d);
        va_start(ap, name);
        for (const char *kv; (kv = va_arg(ap, const char *)); ) {
                const char *eq = strchr(kv, '=');
                char v[128];

                ASSERT_TRUE(eq);
                snprintf(p, sizeof p, "%s/%.*s", d, (int) (eq - kv), kv);
                snprintf(v, sizeof v, "%s\n", eq + 1);
                test_write_file(p, v);
        }
        va_end(ap);
}

static int on_ac(const char *dir, bool *ret) {
        return power_on_ac(test_path(tmpdir, dir), ret);
}

static void assert_ac(const char *dir, bool expected) {
        bool b = !expected;
        int r = on_ac(dir, &b);

        if (r < 0 || b != expected) {
                fprintf(stderr, "power_on_ac(%s) = %d, %s; expected %s\n", dir, r, b ? "true" : "false",
                        expected ? "true" : "false");
                ASSERT_TRUE(false);
        }
}

TEST(power_supply) {
        /* No supplies at all (desktop, VM) and no directory at all (container). */
        mkdir_p(test_path(tmpdir, "ps-empty"));
        assert_ac("ps-empty", true);
        assert_ac("ps-missing", true);

        /* Laptop on AC, battery charging. */
        make_supply("ps-laptop-ac", "AC", "type=Mains", "online=1", NULL);
        make_supply("ps-laptop-ac", "BAT0", "type=Battery", "status=Charging", "present=1", "scope=System", NULL);
        assert_ac("ps-laptop-ac", true);

        /* Laptop on battery. */
        make_supply("ps-laptop-bat", "AC", "type=Mains", "online=0", NULL);
        make_supply("ps-laptop-bat", "BAT0", "type=Battery", "status=Discharging", "present=1", NULL);
        assert_ac("ps-laptop-bat", false);

        /* AC online wins over a battery that still says Discharging (status lags behind). */
        make_supply("ps-lag", "AC", "type=Mains", "online=1", NULL);
        make_supply("ps-lag", "BAT0", "type=Battery", "status=Discharging", NULL);
        assert_ac("ps-lag", true);

        /* AC known and offline, battery full: on battery, as ConditionACPower= says. */
        make_supply("ps-full", "ADP1", "type=Mains", "online=0", NULL);
        make_supply("ps-full", "BAT1", "type=Battery", "status=Full", NULL);
        assert_ac("ps-full", false);

        /* Battery only, no AC adapter exposed: discharging means battery... */
        make_supply("ps-batonly-dis", "BAT0", "type=Battery", "status=Discharging", NULL);
        assert_ac("ps-batonly-dis", false);
        /* ...anything else means nothing is known to be wrong. */
        make_supply("ps-batonly-chg", "BAT0", "type=Battery", "status=Not charging", NULL);
        assert_ac("ps-batonly-chg", true);

        /* A desktop whose only supply is a wireless mouse running on its battery. */
        make_supply("ps-mouse", "hidpp_battery_0", "type=Battery", "scope=Device", "status=Discharging", NULL);
        assert_ac("ps-mouse", true);

        /* A laptop on battery with a peripheral: the peripheral does not change anything... */
        make_supply("ps-mouse-bat", "AC", "type=Mains", "online=0", NULL);
        make_supply("ps-mouse-bat", "BAT0", "type=Battery", "status=Discharging", NULL);
        make_supply("ps-mouse-bat", "hid-mouse", "type=Battery", "scope=Device", "status=Charging", NULL);
        assert_ac("ps-mouse-bat", false);

        /* ...and a peripheral's charger that is "online" is not the machine's AC. */
        make_supply("ps-mouse-usb", "BAT0", "type=Battery", "status=Discharging", NULL);
        make_supply("ps-mouse-usb", "hid-dock", "type=USB", "scope=Device", "online=1", NULL);
        assert_ac("ps-mouse-usb", false);

        /* USB-C charging: "online" 2 (online as a source) counts, other types than Mains count. */
        make_supply("ps-usbc", "ucsi-source-psy-USBC000:001", "type=USB", "online=2", NULL);
        make_supply("ps-usbc", "ucsi-source-psy-USBC000:002", "type=USB", "online=0", NULL);
        make_supply("ps-usbc", "BAT0", "type=Battery", "status=Discharging", NULL);
        assert_ac("ps-usbc", true);
        make_supply("ps-usbc-off", "USBC", "type=USB_C", "online=0", NULL);
        assert_ac("ps-usbc-off", false);

        /* A battery that is not present; an entry without a type; an AC entry without "online". */
        make_supply("ps-odd", "BAT0", "type=Battery", "present=0", "status=Discharging", NULL);
        make_supply("ps-odd", "weird", "online=0", NULL);
        make_supply("ps-odd", "AC", "type=Mains", NULL);
        assert_ac("ps-odd", true);

        /* Not a directory. */
        test_write_file(test_path(tmpdir, "ps-file"), "x\n");
        ASSERT_ERROR(on_ac("ps-file", &(bool) { false }), ENOTDIR);
}

TEST(psi) {
        double d = -1;
        uint64_t t = 0;

        test_write_file(test_path(tmpdir, "io"),
                   "some avg10=12.34 avg60=0.50 avg300=0.10 total=123456789\n"
                   "full avg10=99.00 avg60=0.00 avg300=0.00 total=5\n");
        ASSERT_OK(psi_read_some_avg10(test_path(tmpdir, "io"), &d));
        ASSERT_TRUE(d > 12.339 && d < 12.341);
        ASSERT_OK(psi_read_some_total(test_path(tmpdir, "io"), &t));
        ASSERT_EQ(t, 123456789);

        /* "full" first, no trailing newline. */
        test_write_file(test_path(tmpdir, "io2"),
                   "full avg10=50.00 avg60=0.00 avg300=0.00 total=5\n"
                   "some avg10=0.00 avg60=0.00 avg300=0.00 total=0");
        ASSERT_OK(psi_read_some_avg10(test_path(tmpdir, "io2"), &d));
        ASSERT_TRUE(d == 0.0);
        ASSERT_OK(psi_read_some_total(test_path(tmpdir, "io2"), &t));
        ASSERT_EQ(t, 0);

        d = 4711;
        t = 4711;
        test_write_file(test_path(tmpdir, "io-full-only"), "full avg10=1.00 avg60=0.00 avg300=0.00 total=5\n");
        ASSERT_ERROR(psi_read_some_avg10(test_path(tmpdir, "io-full-only"), &d), EBADMSG);
        test_write_file(test_path(tmpdir, "io-bad"), "some avg10=abc avg60=0.00 avg300=0.00 total=-5\n");
        ASSERT_ERROR(psi_read_some_avg10(test_path(tmpdir, "io-bad"), &d), EBADMSG);
        ASSERT_ERROR(psi_read_some_total(test_path(tmpdir, "io-bad"), &t), EBADMSG);
        test_write_file(test_path(tmpdir, "io-nofield"), "some avg60=0.00\n");
        ASSERT_ERROR(psi_read_some_avg10(test_path(tmpdir, "io-nofield"), &d), EBADMSG);
        ASSERT_ERROR(psi_read_some_total(test_path(tmpdir, "io-nofield"), &t), EBADMSG);
        test_write_file(test_path(tmpdir, "io-empty"), "");
        ASSERT_ERROR(psi_read_some_avg10(test_path(tmpdir, "io-empty"), &d), EBADMSG);
        ASSERT_ERROR(psi_read_some_avg10(test_path(tmpdir, "io-missing"), &d), ENOENT);
        ASSERT_TRUE(d == 4711);
        ASSERT_EQ(t, 4711);
}

TEST(loadavg) {
        double d = -1;

        test_write_file(test_path(tmpdir, "loadavg"), "0.52 0.58 0.59 1/467 12345\n");
        ASSERT_OK(loadavg_read(test_path(tmpdir, "loadavg"), &d));
        ASSERT_TRUE(d > 0.519 && d < 0.521);
        test_write_file(test_path(tmpdir, "loadavg2"), "13.00 0.58 0.59 1/467 12345\n");
        ASSERT_OK(loadavg_read(test_path(tmpdir, "loadavg2"), &d));
        ASSERT_TRUE(d == 13.0);

        d = 4711;
        test_write_file(test_path(tmpdir, "loadavg-bad"), "x 0.58\n");
        ASSERT_ERROR(loadavg_read(test_path(tmpdir, "loadavg-bad"), &d), EBADMSG);
        test_write_file(test_path(tmpdir, "loadavg-empty"), "\n");
        ASSERT_ERROR(loadavg_read(test_path(tmpdir, "loadavg-empty"), &d), EBADMSG);
        ASSERT_ERROR(loadavg_read(test_path(tmpdir, "loadavg-missing"), &d), ENOENT);
        ASSERT_TRUE(d == 4711);
}

/* <sysfs>/devices/<path> with queue/rotational = flag (NULL: none), and <sysfs>/dev/block/<majmin>
 * pointing at it. */
static void make_block(const char *majmin, const char *devpath, const char *flag, bool partition) {
        char p[PATH_MAX], target[PATH_MAX];

        snprintf(p, sizeof p, "%s/sysfs/devices/%s", tmpdir, devpath);
        mkdir_p(p);
        if (partition) {
                snprintf(p, sizeof p, "%s/sysfs/devices/%s/partition", tmpdir, devpath);
                test_write_file(p, "1\n");
        }
        if (flag) {
                snprintf(p, sizeof p, "%s/sysfs/devices/%s/queue", tmpdir, devpath);
                mkdir_p(p);
                snprintf(p, sizeof p, "%s/sysfs/devices/%s/queue/rotational", tmpdir, devpath);
                test_write_file(p, flag);
        }
        snprintf(p, sizeof p, "%s/sysfs/dev/block", tmpdir);
        mkdir_p(p);
        snprintf(p, sizeof p, "%s/sysfs/dev/block/%s", tmpdir, majmin);
        snprintf(target, sizeof target, "../../devices/%s", devpath);
        ASSERT_TRUE(symlink(target, p) == 0);
}

static void set_backing_file(const char *devpath, const char *file) {
        char p[PATH_MAX], v[PATH_MAX + 1];

        snprintf(p, sizeof p, "%s/sysfs/devices/%s/loop", tmpdir, devpath);
        mkdir_p(p);
        snprintf(p, sizeof p, "%s/sysfs/devices/%s/loop/backing_file", tmpdir, devpath);
        snprintf(v, sizeof v, "%s\n", file);
        test_write_file(p, v);
}

static int rot(unsigned maj, unsigned min, bool *ret) {
        return block_device_rotational(test_path(tmpdir, "sysfs"), makedev(maj, min), ret);
}

static void assert_rot(unsigned maj, unsigned min, bool expected) {
        bool b = !expected;
        int r = rot(maj, min, &b);

        if (r < 0 || b != expected) {
                fprintf(stderr, "block_device_rotational(%u:%u) = %d, %d; expected %d\n", maj, min, r, b, expected);
                ASSERT_TRUE(false);
        }
}

TEST(rotational) {
        struct stat st;
        bool b = false;

        make_block("8:0", "pci0000:00/host0/block/sda", "1", false);
        make_block("8:1", "pci0000:00/host0/block/sda/sda1", NULL, true);
        make_block("259:0", "pci0000:00/nvme/nvme0/nvme0n1", "0", false);
        make_block("259:1", "pci0000:00/nvme/nvme0/nvme0n1/nvme0n1p1", NULL, true);
        make_block("8:16", "pci0000:00/host1/block/sdb", "maybe", false);
        make_block("8:32", "pci0000:00/host2/block/sdc", NULL, false);
        make_block("253:0", "virtual/block/dm-0", "0", false);

        assert_rot(8, 0, true);
        assert_rot(8, 1, true);   /* partition → disk */
        assert_rot(259, 0, false);
        assert_rot(259, 1, false);
        assert_rot(253, 0, false);
        ASSERT_ERROR(rot(8, 16, &b), EBADMSG);
        ASSERT_ERROR(rot(8, 32, &b), ENOENT);  /* no queue/rotational */
        ASSERT_ERROR(rot(9, 9, &b), ENOENT);   /* not in sysfs */
        ASSERT_ERROR(rot(0, 45, &b), ENOENT);  /* anonymous (btrfs, tmpfs, overlayfs) */

        /* Loop device whose backing file vanished, and one without a backing file: its own flag. */
        make_block("7:0", "virtual/block/loop0", "0", false);
        set_backing_file("virtual/block/loop0", "/nonexistent/seekless/image (deleted)");
        assert_rot(7, 0, false);
        make_block("7:1", "virtual/block/loop1", "1", false);
        assert_rot(7, 1, true);

        /* Loop device backed by a file in our tmpdir: the answer is that of the tmpdir's device, which we
         * put into the fake sysfs as an SSD, while the loop device itself claims to be rotational. */
        test_write_file(test_path(tmpdir, "image"), "");
        ASSERT_TRUE(stat(test_path(tmpdir, "image"), &st) == 0);
        make_block("7:3", "virtual/block/loop3", "1", false);
        set_backing_file("virtual/block/loop3", test_path(tmpdir, "image"));
        if (major(st.st_dev) != 0) {
                char majmin[32];

                snprintf(majmin, sizeof majmin, "%u:%u", major(st.st_dev), minor(st.st_dev));
                if (!streq(majmin, "259:0") && !streq(majmin, "259:1") && !streq(majmin, "8:0") &&
                    !streq(majmin, "8:1") && !streq(majmin, "7:3")) {
                        make_block(majmin, "virtual/block/host-ssd", "0", false);
                        assert_rot(7, 3, false);
                } else
                        fprintf(stderr, "tmpdir device %s collides with a fixture, skipping loop following\n",
                                majmin);
        } else
                /* tmpfs: no block device behind the file, so the loop device's own flag. */
                assert_rot(7, 3, true);

        /* A backing "file" whose st_dev is not in the fake sysfs: the loop device's own flag. */
        make_block("7:4", "virtual/block/loop4", "1", false);
        set_backing_file("virtual/block/loop4", "/dev/null");
        assert_rot(7, 4, true);
}

TEST(format_timespan) {
        char buf[32];

#define ONE_UNIT(usec) format_timespan(buf, sizeof buf, (usec), TIMESPAN_ONE_UNIT)
        ASSERT_STREQ(ONE_UNIT(0), "0 s");
        ASSERT_STREQ(ONE_UNIT(999999), "0 s");
        ASSERT_STREQ(ONE_UNIT(45 * USEC_PER_SEC), "45 s");
        ASSERT_STREQ(ONE_UNIT(59 * USEC_PER_SEC + 999999), "59 s");
        ASSERT_STREQ(ONE_UNIT(USEC_PER_MINUTE), "1 min");
        ASSERT_STREQ(ONE_UNIT(4 * USEC_PER_MINUTE + 59 * USEC_PER_SEC), "4 min");
        ASSERT_STREQ(ONE_UNIT(3 * USEC_PER_HOUR + 59 * USEC_PER_MINUTE), "3 h");
        ASSERT_STREQ(ONE_UNIT(47 * USEC_PER_HOUR), "47 h");
        ASSERT_STREQ(ONE_UNIT(2 * USEC_PER_DAY), "2 d");
        ASSERT_STREQ(ONE_UNIT(400 * USEC_PER_DAY), "400 d");
        ASSERT_STREQ(ONE_UNIT(UINT64_MAX), "213503982 d");
#undef ONE_UNIT
}

static const IdleConfig config_default = {
        .idle_usec = 300 * USEC_PER_SEC,
        .min_interval_usec = 24 * USEC_PER_HOUR,
        .boot_quiet_usec = 600 * USEC_PER_SEC,
        .max_io_pressure = 10.0,
        .max_load_per_cpu = 0.5,
        .max_quality_loss_percent = 25.0,
        .optimize_non_rotational = false,
};

#define NOW (100 * USEC_PER_HOUR)
#define NOW_RT ((uint64_t) 1700000000 * USEC_PER_SEC)

/* A machine on which a run may start; each row changes a few fields. */
#define INPUTS(...)                                                             \
        ((IdleInputs) {                                                         \
                .on_ac = true,                                                  \
                .io_some_avg10 = 0.5,                                           \
                .load1 = 0.2,                                                   \
                .n_cpus = 4,                                                    \
                .graphical_sessions = false,                                    \
                .seats_idle = false,                                            \
                .uptime_usec = NOW,                                             \
                .now_usec = NOW,                                                \
                .busy_since_usec = NOW - 10 * USEC_PER_MINUTE,                  \
                .last_run_realtime_usec = 0,                                    \
                .now_realtime_usec = NOW_RT,                                    \
                .profiles_changed = false,                                      \
                .worst_profile = NULL,                                          \
                .worst_loss_percent = 0,                                        \
                .requested = false,                                             \
                .run_paused = false,                                            \
                __VA_ARGS__                                                     \
        })

#define BUSY .io_some_avg10 = 50, .load1 = 100, .graphical_sessions = true, .seats_idle = false
#define RECENT .last_run_realtime_usec = NOW_RT - 3 * USEC_PER_HOUR
#define DEGRADED(name, pct) .worst_profile = (name), .worst_loss_percent = (pct)

typedef struct Row {
        const char *name;
        const IdleConfig *config; /* NULL: config_default */
        IdleInputs in;
        IdleReason reason;
        const char *text;
} Row;

static const IdleConfig config_no_interval = {
        .idle_usec = 300 * USEC_PER_SEC,
        .min_interval_usec = 0,
        .boot_quiet_usec = 600 * USEC_PER_SEC,
        .max_io_pressure = 10.0,
        .max_load_per_cpu = 0.5,
};

static const IdleConfig config_quality_off = {
        .idle_usec = 300 * USEC_PER_SEC,
        .min_interval_usec = 24 * USEC_PER_HOUR,
        .boot_quiet_usec = 600 * USEC_PER_SEC,
        .max_io_pressure = 10.0,
        .max_load_per_cpu = 0.5,
        .max_quality_loss_percent = 0,
};

static const IdleConfig config_zero = {
        .max_io_pressure = 10.0,
        .max_load_per_cpu = 0.5,
        .min_interval_usec = 48 * USEC_PER_HOUR,
};

TEST(decide) {
        const Row rows[] = {
                { "all good", NULL, INPUTS(), IDLE_REASON_NONE, "idle for 10 min" },

                /* 1. power */
                { "on battery", NULL, INPUTS(.on_ac = false), IDLE_REASON_ON_BATTERY, "on battery" },
                { "battery before everything", NULL,
                  INPUTS(.on_ac = false, BUSY, RECENT, .uptime_usec = 0, .busy_since_usec = NOW),
                  IDLE_REASON_ON_BATTERY, "on battery" },

                /* 2. interval */
                { "ran 3 h ago", NULL, INPUTS(RECENT), IDLE_REASON_RECENT_RUN, "ran 3 h ago (MinIntervalHours=24)" },
                { "ran 45 s ago", NULL, INPUTS(.last_run_realtime_usec = NOW_RT - 45 * USEC_PER_SEC),
                  IDLE_REASON_RECENT_RUN, "ran 45 s ago (MinIntervalHours=24)" },
                { "ran just under a day ago", NULL,
                  INPUTS(.last_run_realtime_usec = NOW_RT - 24 * USEC_PER_HOUR + 1),
                  IDLE_REASON_RECENT_RUN, "ran 23 h ago (MinIntervalHours=24)" },
                { "ran exactly a day ago", NULL, INPUTS(.last_run_realtime_usec = NOW_RT - 24 * USEC_PER_HOUR),
                  IDLE_REASON_NONE, "idle for 10 min" },
                { "interval before boot quiet and busy", NULL,
                  INPUTS(RECENT, BUSY, .uptime_usec = 0, .busy_since_usec = NOW),
                  IDLE_REASON_RECENT_RUN, "ran 3 h ago (MinIntervalHours=24)" },
                { "profiles changed overrides MinIntervalHours", NULL, INPUTS(RECENT, .profiles_changed = true),
                  IDLE_REASON_NONE, "idle for 10 min; new profiles since the last run" },
                { "profiles changed after the interval: nothing to explain", NULL, INPUTS(.profiles_changed = true),
                  IDLE_REASON_NONE, "idle for 10 min" },
                { "profiles changed does not override being busy", NULL,
                  INPUTS(RECENT, .profiles_changed = true, .io_some_avg10 = 12.3),
                  IDLE_REASON_IO_BUSY, "I/O busy (some avg10 12.3% > 10%)" },

                /* 2b. layout quality (MaxQualityLossPercent=25) */
                { "quality degraded overrides MinIntervalHours", NULL, INPUTS(RECENT, DEGRADED("boot", 40)),
                  IDLE_REASON_NONE,
                  "idle for 10 min; layout of the boot profile degraded 40.0% since the last run (MaxQualityLossPercent=25)" },
                { "an application profile", NULL, INPUTS(RECENT, DEGRADED("/usr/bin/gimp", 1523.44)),
                  IDLE_REASON_NONE,
                  "idle for 10 min; layout of an application profile degraded 1523.4% since the last run "
                  "(MaxQualityLossPercent=25)" },
                { "just over the threshold", NULL, INPUTS(RECENT, DEGRADED("boot", 25.5)), IDLE_REASON_NONE,
                  "idle for 10 min; layout of the boot profile degraded 25.5% since the last run (MaxQualityLossPercent=25)" },
                { "exactly the threshold is not past it", NULL, INPUTS(RECENT, DEGRADED("boot", 25)),
                  IDLE_REASON_RECENT_RUN, "ran 3 h ago (MinIntervalHours=24)" },
                { "below the threshold", NULL, INPUTS(RECENT, DEGRADED("boot", 10)), IDLE_REASON_RECENT_RUN,
                  "ran 3 h ago (MinIntervalHours=24)" },
                { "a loss without a profile (not checked) counts for nothing", NULL,
                  INPUTS(RECENT, DEGRADED(NULL, 400)), IDLE_REASON_RECENT_RUN, "ran 3 h ago (MinIntervalHours=24)" },
                { "MaxQualityLossPercent=0 turns the trigger off", &config_quality_off,
                  INPUTS(RECENT, DEGRADED("boot", 5000)), IDLE_REASON_RECENT_RUN, "ran 3 h ago (MinIntervalHours=24)" },
                { "profiles changed is named before the layout", NULL,
                  INPUTS(RECENT, .profiles_changed = true, DEGRADED("boot", 40)), IDLE_REASON_NONE,
                  "idle for 10 min; new profiles since the last run" },
                { "degraded after the interval: nothing to explain", NULL, INPUTS(DEGRADED("boot", 40)),
                  IDLE_REASON_NONE, "idle for 10 min" },
                { "quality degraded does not override boot quiet", NULL,
                  INPUTS(RECENT, DEGRADED("boot", 40), .uptime_usec = 4 * USEC_PER_MINUTE),
                  IDLE_REASON_BOOT_QUIET, "booted 4 min ago (BootQuietSec=10 min)" },
                { "quality degraded does not override IdleSec", NULL,
                  INPUTS(RECENT, DEGRADED("boot", 40), .busy_since_usec = NOW - USEC_PER_MINUTE),
                  IDLE_REASON_NOT_IDLE_LONG, "idle for 1 min of 5 min (IdleSec=)" },

                /* 2c. an administrator's queued request; a paused run */
                { "requested: MinIntervalHours does not apply", NULL, INPUTS(RECENT, .requested = true),
                  IDLE_REASON_NONE, "idle for 10 min" },
                { "requested: ran a minute ago", NULL,
                  INPUTS(.last_run_realtime_usec = NOW_RT - 60 * USEC_PER_SEC, .requested = true),
                  IDLE_REASON_NONE, "idle for 10 min" },
                { "requested: still not on battery", NULL, INPUTS(RECENT, .requested = true, .on_ac = false),
                  IDLE_REASON_ON_BATTERY, "on battery" },
                { "requested: still not during BootQuietSec", NULL,
                  INPUTS(RECENT, .requested = true, .uptime_usec = 4 * USEC_PER_MINUTE),
                  IDLE_REASON_BOOT_QUIET, "booted 4 min ago (BootQuietSec=10 min)" },
                { "requested: still not when I/O is busy", NULL, INPUTS(.requested = true, .io_some_avg10 = 12.34),
                  IDLE_REASON_IO_BUSY, "I/O busy (some avg10 12.3% > 10%)" },
                { "requested: still not under load", NULL, INPUTS(.requested = true, .load1 = 3.1, .n_cpus = 2),
                  IDLE_REASON_LOAD, "load 3.1 > 1.0 (MaxLoadPerCPU=0.5, 2 CPUs)" },
                { "requested: still not while the user is active", NULL,
                  INPUTS(.requested = true, .graphical_sessions = true), IDLE_REASON_USER_ACTIVE,
                  "user active (logind)" },
                { "requested: still waits for IdleSec", NULL,
                  INPUTS(RECENT, .requested = true, .busy_since_usec = NOW - 45 * USEC_PER_SEC),
                  IDLE_REASON_NOT_IDLE_LONG, "idle for 45 s of 5 min (IdleSec=)" },
                { "paused run: resumes within MinIntervalHours", NULL, INPUTS(RECENT, .run_paused = true),
                  IDLE_REASON_NONE, "idle for 10 min" },
                { "paused run: still waits for IdleSec", NULL,
                  INPUTS(RECENT, .run_paused = true, .busy_since_usec = NOW - 2 * USEC_PER_MINUTE),
                  IDLE_REASON_NOT_IDLE_LONG, "idle for 2 min of 5 min (IdleSec=)" },
                { "last run in the future (clock was wrong)", NULL,
                  INPUTS(.last_run_realtime_usec = NOW_RT + USEC_PER_HOUR), IDLE_REASON_NONE, "idle for 10 min" },
                { "MinIntervalHours=0", &config_no_interval, INPUTS(.last_run_realtime_usec = NOW_RT),
                  IDLE_REASON_NONE, "idle for 10 min" },
                { "MinIntervalHours=48", &config_zero, INPUTS(.last_run_realtime_usec = NOW_RT - 30 * USEC_PER_HOUR),
                  IDLE_REASON_RECENT_RUN, "ran 30 h ago (MinIntervalHours=48)" },

                /* 3. boot quiet */
                { "booted 4 min ago", NULL, INPUTS(.uptime_usec = 4 * USEC_PER_MINUTE + 30 * USEC_PER_SEC),
                  IDLE_REASON_BOOT_QUIET, "booted 4 min ago (BootQuietSec=10 min)" },
                { "boot quiet before busy", NULL, INPUTS(.uptime_usec = 20 * USEC_PER_SEC, BUSY),
                  IDLE_REASON_BOOT_QUIET, "booted 20 s ago (BootQuietSec=10 min)" },
                { "boot quiet just over", NULL, INPUTS(.uptime_usec = 600 * USEC_PER_SEC),
                  IDLE_REASON_NONE, "idle for 10 min" },

                /* 4. I/O */
                { "I/O busy", NULL, INPUTS(.io_some_avg10 = 12.34), IDLE_REASON_IO_BUSY,
                  "I/O busy (some avg10 12.3% > 10%)" },
                { "I/O before load and user", NULL, INPUTS(BUSY), IDLE_REASON_IO_BUSY,
                  "I/O busy (some avg10 50.0% > 10%)" },
                { "I/O at the limit is fine", NULL, INPUTS(.io_some_avg10 = 10.0), IDLE_REASON_NONE,
                  "idle for 10 min" },

                /* 5. load */
                { "load", NULL, INPUTS(.load1 = 3.1, .n_cpus = 2), IDLE_REASON_LOAD,
                  "load 3.1 > 1.0 (MaxLoadPerCPU=0.5, 2 CPUs)" },
                { "load, 0 CPUs taken as 1", NULL, INPUTS(.load1 = 0.6, .n_cpus = 0), IDLE_REASON_LOAD,
                  "load 0.6 > 0.5 (MaxLoadPerCPU=0.5, 1 CPU)" },
                { "load before user", NULL, INPUTS(.load1 = 2.5, .graphical_sessions = true), IDLE_REASON_LOAD,
                  "load 2.5 > 2.0 (MaxLoadPerCPU=0.5, 4 CPUs)" },
                { "load at the limit is fine", NULL, INPUTS(.load1 = 2.0), IDLE_REASON_NONE, "idle for 10 min" },

                /* 6. logind */
                { "user active", NULL, INPUTS(.graphical_sessions = true, .seats_idle = false),
                  IDLE_REASON_USER_ACTIVE, "user active (logind)" },
                { "user idle", NULL, INPUTS(.graphical_sessions = true, .seats_idle = true),
                  IDLE_REASON_NONE, "idle for 10 min" },
                { "only tty/ssh sessions: IdleHint is ignored", NULL,
                  INPUTS(.graphical_sessions = false, .seats_idle = false), IDLE_REASON_NONE, "idle for 10 min" },

                /* 7. idle long enough */
                { "idle 2 min", NULL, INPUTS(.busy_since_usec = NOW - 2 * USEC_PER_MINUTE),
                  IDLE_REASON_NOT_IDLE_LONG, "idle for 2 min of 5 min (IdleSec=)" },
                { "idle 45 s", NULL, INPUTS(.busy_since_usec = NOW - 45 * USEC_PER_SEC),
                  IDLE_REASON_NOT_IDLE_LONG, "idle for 45 s of 5 min (IdleSec=)" },
                { "busy just now", NULL, INPUTS(.busy_since_usec = NOW), IDLE_REASON_NOT_IDLE_LONG,
                  "idle for 0 s of 5 min (IdleSec=)" },
                { "busy_since in the future", NULL, INPUTS(.busy_since_usec = NOW + USEC_PER_SEC),
                  IDLE_REASON_NOT_IDLE_LONG, "idle for 0 s of 5 min (IdleSec=)" },
                { "idle exactly IdleSec", NULL, INPUTS(.busy_since_usec = NOW - 5 * USEC_PER_MINUTE),
                  IDLE_REASON_NONE, "idle for 5 min" },
                { "never busy since boot", NULL, INPUTS(.busy_since_usec = 0), IDLE_REASON_NONE, "idle for 4 d" },
                { "all zero config", &config_zero, INPUTS(.uptime_usec = 0, .busy_since_usec = NOW),
                  IDLE_REASON_NONE, "idle for 0 s" },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const Row *row = rows + i;
                const IdleConfig *c = row->config ?: &config_default;
                char text[128] = "untouched";
                IdleReason r;
                IdleVerdict v;

                fprintf(stderr, "   %s\n", row->name);
                r = idle_check(c, &row->in, text, sizeof text);
                if (r != row->reason || !streq(text, row->text)) {
                        fprintf(stderr, "%s: got %s \"%s\", expected %s \"%s\"\n", row->name, idle_reason_to_string(r),
                                text, idle_reason_to_string(row->reason), row->text);
                        ASSERT_TRUE(false);
                }

                /* idle_decide() agrees and writes the same text; NULL reason is fine. */
                memset(text, 'x', sizeof text);
                v = idle_decide(c, &row->in, text, sizeof text);
                ASSERT_EQ(v, row->reason == IDLE_REASON_NONE ? IDLE_GO : IDLE_WAIT);
                ASSERT_STREQ(text, row->text);
                ASSERT_EQ(idle_decide(c, &row->in, NULL, 0), v);
        }
}

TEST(only_interval_blocks) {
        const IdleConfig *c = &config_default;

        ASSERT_TRUE(idle_only_interval_blocks(c, &INPUTS(RECENT)));
        ASSERT_TRUE(idle_only_interval_blocks(c, &INPUTS(RECENT, DEGRADED("boot", 10))));

        /* nothing holds it back, or something else does as well */
        ASSERT_TRUE(!idle_only_interval_blocks(c, &INPUTS()));
        ASSERT_TRUE(!idle_only_interval_blocks(c, &INPUTS(RECENT, .on_ac = false)));
        ASSERT_TRUE(!idle_only_interval_blocks(c, &INPUTS(RECENT, .uptime_usec = USEC_PER_MINUTE)));
        ASSERT_TRUE(!idle_only_interval_blocks(c, &INPUTS(RECENT, .io_some_avg10 = 50)));
        ASSERT_TRUE(!idle_only_interval_blocks(c, &INPUTS(RECENT, .load1 = 100)));
        ASSERT_TRUE(!idle_only_interval_blocks(c, &INPUTS(RECENT, .graphical_sessions = true)));
        ASSERT_TRUE(!idle_only_interval_blocks(c, &INPUTS(RECENT, .busy_since_usec = NOW - USEC_PER_MINUTE)));

        /* the interval is lifted already */
        ASSERT_TRUE(!idle_only_interval_blocks(c, &INPUTS(RECENT, .profiles_changed = true)));
        ASSERT_TRUE(!idle_only_interval_blocks(c, &INPUTS(RECENT, DEGRADED("boot", 40))));
        ASSERT_TRUE(!idle_only_interval_blocks(c, &INPUTS(RECENT, .requested = true)));
        ASSERT_TRUE(!idle_only_interval_blocks(c, &INPUTS(RECENT, .run_paused = true)));
}

TEST(quality_loss) {
        ASSERT_TRUE(idle_quality_loss_percent(10.0, 14.0) > 39.999 && idle_quality_loss_percent(10.0, 14.0) < 40.001);
        ASSERT_TRUE(idle_quality_loss_percent(100.0, 125.0) == 25.0);
        ASSERT_TRUE(idle_quality_loss_percent(8.0, 80.0) == 900.0);
        ASSERT_TRUE(idle_quality_loss_percent(10.0, 10.0) == 0);
        ASSERT_TRUE(idle_quality_loss_percent(10.0, 5.0) == 0);      /* better is not a loss */
        ASSERT_TRUE(idle_quality_loss_percent(0, 5.0) == 0);         /* no usable snapshot */
        ASSERT_TRUE(idle_quality_loss_percent(-1.0, 5.0) == 0);
        ASSERT_TRUE(idle_quality_loss_percent(NAN, 5.0) == 0);
        ASSERT_TRUE(idle_quality_loss_percent(10.0, NAN) == 0);
}

TEST(busy) {
        char text[128];

        ASSERT_TRUE(!idle_inputs_busy(&config_default, &INPUTS(), text, sizeof text));
        ASSERT_STREQ(text, "");

        /* The clocks do not matter for "busy now". */
        ASSERT_TRUE(!idle_inputs_busy(&config_default, &INPUTS(RECENT, .uptime_usec = 0, .busy_since_usec = NOW),
                                      text, sizeof text));

        ASSERT_TRUE(idle_inputs_busy(&config_default, &INPUTS(.on_ac = false, BUSY), text, sizeof text));
        ASSERT_STREQ(text, "on battery");
        ASSERT_TRUE(idle_inputs_busy(&config_default, &INPUTS(BUSY), text, sizeof text));
        ASSERT_STREQ(text, "I/O busy (some avg10 50.0% > 10%)");
        ASSERT_TRUE(idle_inputs_busy(&config_default, &INPUTS(.load1 = 9, .graphical_sessions = true), text,
                                     sizeof text));
        ASSERT_STREQ(text, "load 9.0 > 2.0 (MaxLoadPerCPU=0.5, 4 CPUs)");
        ASSERT_TRUE(idle_inputs_busy(&config_default, &INPUTS(.graphical_sessions = true), text, sizeof text));
        ASSERT_STREQ(text, "user active (logind)");
        ASSERT_TRUE(idle_inputs_busy(&config_default, &INPUTS(.graphical_sessions = true), NULL, 0));

        /* A short buffer is truncated, not overrun. */
        {
                char small[8];

                ASSERT_TRUE(idle_inputs_busy(&config_default, &INPUTS(BUSY), small, sizeof small));
                ASSERT_STREQ(small, "I/O bus");
        }
}

TEST(reason_names) {
        ASSERT_STREQ(idle_reason_to_string(IDLE_REASON_NONE), "none");
        ASSERT_STREQ(idle_reason_to_string(IDLE_REASON_ON_BATTERY), "on-battery");
        ASSERT_STREQ(idle_reason_to_string(IDLE_REASON_NOT_IDLE_LONG), "not-idle-long-enough");
        for (IdleReason r = 0; r < _IDLE_REASON_MAX; r++)
                ASSERT_TRUE(idle_reason_to_string(r));
        ASSERT_TRUE(!idle_reason_to_string(_IDLE_REASON_MAX));
        ASSERT_TRUE(!idle_reason_to_string(_IDLE_REASON_INVALID));
}

TEST(device_allowed) {
        IdleConfig c = config_default;
        char text[128];

        ASSERT_TRUE(idle_device_allowed(&c, 1, text, sizeof text));
        ASSERT_STREQ(text, "");
        ASSERT_TRUE(idle_device_allowed(&c, -ENOENT, text, sizeof text));
        ASSERT_TRUE(!idle_device_allowed(&c, 0, text, sizeof text));
        ASSERT_STREQ(text, "non-rotational device (OptimizeNonRotational=no)");
        c.optimize_non_rotational = true;
        ASSERT_TRUE(idle_device_allowed(&c, 0, text, sizeof text));
        ASSERT_TRUE(idle_device_allowed(&c, 0, NULL, 0));
}

TEST(from_config) {
        Config conf = {
                .idle_usec = 7 * USEC_PER_SEC,
                .min_interval_hours = 8760,
                .boot_quiet_usec = 9 * USEC_PER_SEC,
                .max_io_pressure = 2.5,
                .max_load_per_cpu = 0.75,
                .max_quality_loss_percent = 12.5,
                .optimize_non_rotational = true,
        };
        IdleConfig ic;

        idle_config_from_config(&ic, &conf);
        ASSERT_EQ(ic.idle_usec, 7 * USEC_PER_SEC);
        ASSERT_EQ(ic.min_interval_usec, 8760 * USEC_PER_HOUR);
        ASSERT_EQ(ic.boot_quiet_usec, 9 * USEC_PER_SEC);
        ASSERT_TRUE(ic.max_io_pressure == 2.5);
        ASSERT_TRUE(ic.max_load_per_cpu == 0.75);
        ASSERT_TRUE(ic.max_quality_loss_percent == 12.5);
        ASSERT_TRUE(ic.optimize_non_rotational);
}

int main(void) {
        char cmd[PATH_MAX + 16];
        int r;

        ASSERT_TRUE(mkdtemp(tmpdir));

        RUN(power_supply);
        RUN(psi);
        RUN(loadavg);
        RUN(rotational);
        RUN(format_timespan);
        RUN(decide);
        RUN(only_interval_blocks);
        RUN(quality_loss);
        RUN(busy);
        RUN(reason_names);
        RUN(device_allowed);
        RUN(from_config);

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        r = system(cmd);
        return r == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
