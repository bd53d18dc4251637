/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "policy/idle.h"
#include "common/fileio.h"
#include "common/macro.h"
#include "common/time-util.h"


/* Loop devices stacked on files on loop devices: enough for any sane setup, and no cycles. */
#define ROTATIONAL_MAX_DEPTH 8

/* Reads "<name>/<attr>" below dfd. */
static ssize_t read_attr_at(int dfd, const char *name, const char *attr, char *buf, size_t size) {
        char p[NAME_MAX + 64];

        if ((size_t) snprintf(p, sizeof p, "%s/%s", name, attr) >= sizeof p)
                return -ENAMETOOLONG;
        return read_small_file_at(dfd, p, buf, size);
}

int power_on_ac(const char *sysfs_power_supply_dir, bool *ret) {
        _cleanup_closedir_ DIR *d = NULL;
        bool ac_online = false, ac_offline = false, discharging = false;
        struct dirent *de;

        d = opendir(sysfs_power_supply_dir);
        if (!d) {
                if (errno == ENOENT) {
                        *ret = true; /* nothing known: like an empty directory */
                        return 0;
                }
                return negative_errno();
        }

        for (;;) {
                char type[64], val[64];

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return negative_errno();
                        break;
                }
                if (de->d_name[0] == '.')
                        continue;

                /* Peripherals (wireless mice, headsets) report their own batteries; skip them. */
                if (read_attr_at(dirfd(d), de->d_name, "scope", val, sizeof val) >= 0 && streq(val, "Device"))
                        continue;
                if (read_attr_at(dirfd(d), de->d_name, "type", type, sizeof type) < 0)
                        continue;

                if (streq(type, "Battery")) {
                        if (read_attr_at(dirfd(d), de->d_name, "present", val, sizeof val) >= 0 && streq(val, "0"))
                                continue;
                        if (read_attr_at(dirfd(d), de->d_name, "status", val, sizeof val) >= 0 &&
                            streq(val, "Discharging"))
                                discharging = true;
                        continue;
                }

                /* Mains, USB, USB_C, USB_PD, UPS, ...: "online" is 0 or, for USB-C, 1 or 2. */
                if (read_attr_at(dirfd(d), de->d_name, "online", val, sizeof val) < 0)
                        continue;
                if (streq(val, "0"))
                        ac_offline = true;
                else if (val[0] >= '1' && val[0] <= '9')
                        ac_online = true;
        }

        if (ac_online)
                *ret = true;
        else if (discharging || ac_offline)
                *ret = false;
        else
                *ret = true;
        return 0;
}

/* Finds the "some" line and the value of "<field>=" on it. */
static int psi_find_some_field(const char *path, const char *field, char *ret_value, size_t size) {
        char buf[512];
        const char *line = NULL;
        ssize_t n;

        n = read_small_file(path, buf, sizeof buf);
        if (n < 0)
                return (int) n;

        for (char *l = buf; l && *l; ) {
                char *e = strchr(l, '\n');

                if (e)
                        *e = '\0';
                if (strncmp(l, "some ", 5) == 0) {
                        line = l + 5;
                        break;
                }
                l = e ? e + 1 : NULL;
        }
        if (!line)
                return -EBADMSG;

        for (const char *w = line; *w; ) {
                size_t len = strcspn(w, " \t");
                size_t flen = strlen(field);

                if (len > flen + 1 && strncmp(w, field, flen) == 0 && w[flen] == '=') {
                        if (len - flen - 1 >= size)
                                return -EBADMSG;
                        memcpy(ret_value, w + flen + 1, len - flen - 1);
                        ret_value[len - flen - 1] = '\0';
                        return 0;
                }
                w += len;
                w += strspn(w, " \t");
        }
        return -EBADMSG;
}

/* A non-negative decimal such as "12.34", without strtod()'s locale and exponent handling. */
static int parse_plain_decimal(const char *s, double *ret) {
        double v = 0, scale = 1;
        bool digits = false;
        const char *p = s;

        for (; *p >= '0' && *p <= '9'; p++) {
                v = v * 10 + (*p - '0');
                digits = true;
        }
        if (*p == '.')
                for (p++; *p >= '0' && *p <= '9'; p++) {
                        scale *= 10; /* one division at the end: "0.75" is exactly 0.75 */
                        v = v * 10 + (*p - '0');
                        digits = true;
                }
        if (!digits || *p != '\0')
                return -EBADMSG;
        v /= scale;
        if (!isfinite(v))
                return -EBADMSG;
        *ret = v;
        return 0;
}

int psi_read_some_avg10(const char *path, double *ret) {
        char v[64];
        double d;
        int r;

        r = psi_find_some_field(path, "avg10", v, sizeof v);
        if (r < 0)
                return r;
        r = parse_plain_decimal(v, &d);
        if (r < 0)
                return r;
        *ret = d;
        return 0;
}

int psi_read_some_total(const char *path, uint64_t *ret_usec) {
        char v[64];
        uint64_t t = 0;
        int r;

        r = psi_find_some_field(path, "total", v, sizeof v);
        if (r < 0)
                return r;
        for (const char *p = v; *p; p++) {
                if (*p < '0' || *p > '9' || t > (UINT64_MAX - 9) / 10)
                        return -EBADMSG;
                t = t * 10 + (uint64_t) (*p - '0');
        }
        *ret_usec = t;
        return 0;
}

int loadavg_read(const char *path, double *ret_load1) {
        char buf[256];
        double d;
        ssize_t n;
        int r;

        n = read_small_file(path, buf, sizeof buf);
        if (n < 0)
                return (int) n;
        buf[strcspn(buf, " \t")] = '\0';
        r = parse_plain_decimal(buf, &d);
        if (r < 0)
                return r;
        *ret_load1 = d;
        return 0;
}

static int read_rotational_flag(const char *disk_dir, bool *ret) {
        char p[PATH_MAX], v[16];
        ssize_t n;

        if ((size_t) snprintf(p, sizeof p, "%s/queue/rotational", disk_dir) >= sizeof p)
                return -ENAMETOOLONG;
        n = read_small_file(p, v, sizeof v);
        if (n < 0)
                return (int) n;
        if (streq(v, "1"))
                *ret = true;
        else if (streq(v, "0"))
                *ret = false;
        else
                return -EBADMSG;
        return 0;
}

static int rotational_recurse(const char *sysfs_root, dev_t dev, unsigned depth, bool *ret) {
        _cleanup_free_ char *disk = NULL;
        char p[PATH_MAX], backing[PATH_MAX];
        struct stat st;
        const char *name;

        if (depth > ROTATIONAL_MAX_DEPTH)
                return -ELOOP;

        if ((size_t) snprintf(p, sizeof p, "%s/dev/block/%u:%u", sysfs_root, major(dev), minor(dev)) >= sizeof p)
                return -ENAMETOOLONG;
        disk = realpath(p, NULL);
        if (!disk)
                return negative_errno();

        /* A partition: its directory sits inside the disk's. */
        if ((size_t) snprintf(p, sizeof p, "%s/partition", disk) >= sizeof p)
                return -ENAMETOOLONG;
        if (access(p, F_OK) >= 0) {
                char *slash = strrchr(disk, '/');

                if (!slash || slash == disk)
                        return -ENOENT;
                *slash = '\0';
        }

        name = strrchr(disk, '/');
        name = name ? name + 1 : disk;
        if (strncmp(name, "loop", 4) == 0 &&
            (size_t) snprintf(p, sizeof p, "%s/loop/backing_file", disk) < sizeof p &&
            read_small_file(p, backing, sizeof backing) > 0 &&
            stat(backing, &st) >= 0 &&
            rotational_recurse(sysfs_root, st.st_dev, depth + 1, ret) >= 0)
                return 0;

        return read_rotational_flag(disk, ret);
}

int block_device_rotational(const char *sysfs_root, dev_t dev, bool *ret) {
        if (major(dev) == 0)
                return -ENOENT; /* anonymous: no block device behind it */
        return rotational_recurse(sysfs_root, dev, 0, ret);
}

void idle_config_from_config(IdleConfig *ic, const Config *c) {
        *ic = (IdleConfig) {
                .idle_usec = c->idle_usec,
                .min_interval_usec = (uint64_t) c->min_interval_hours * USEC_PER_HOUR,
                .boot_quiet_usec = c->boot_quiet_usec,
                .max_io_pressure = c->max_io_pressure,
                .max_load_per_cpu = c->max_load_per_cpu,
                .max_quality_loss_percent = c->max_quality_loss_percent,
                .optimize_non_rotational = c->optimize_non_rotational,
        };
}

static const char *const idle_reason_table[_IDLE_REASON_MAX] = {
        [IDLE_REASON_NONE] = "none",
        [IDLE_REASON_ON_BATTERY] = "on-battery",
        [IDLE_REASON_RECENT_RUN] = "recent-run",
        [IDLE_REASON_BOOT_QUIET] = "boot-quiet",
        [IDLE_REASON_IO_BUSY] = "io-busy",
        [IDLE_REASON_LOAD] = "load",
        [IDLE_REASON_USER_ACTIVE] = "user-active",
        [IDLE_REASON_NOT_IDLE_LONG] = "not-idle-long-enough",
};

DEFINE_STRING_TABLE_TO_STRING(idle_reason, IdleReason, )

/* snprintf() into an optional buffer. */
_printf_(3, 4)
static void reason_set(char *reason, size_t size, const char *format, ...) {
        va_list ap;

        if (!reason || size == 0)
                return;
        va_start(ap, format);
        (void) vsnprintf(reason, size, format, ap);
        va_end(ap);
}

/* The "busy" checks 1, 4, 5, 6 of IdleReason, in that order. */
static IdleReason idle_busy_reason(const IdleConfig *c, const IdleInputs *in, char *reason, size_t size) {
        unsigned n_cpus = MAX(in->n_cpus, 1u);
        double max_load = c->max_load_per_cpu * n_cpus;

        if (!in->on_ac) {
                reason_set(reason, size, "on battery");
                return IDLE_REASON_ON_BATTERY;
        }
        if (in->io_some_avg10 > c->max_io_pressure) {
                reason_set(reason, size, "I/O busy (some avg10 %.1f%% > %g%%)", in->io_some_avg10, c->max_io_pressure);
                return IDLE_REASON_IO_BUSY;
        }
        if (in->load1 > max_load) {
                reason_set(reason, size, "load %.1f > %.1f (MaxLoadPerCPU=%g, %u CPU%s)", in->load1, max_load,
                           c->max_load_per_cpu, n_cpus, n_cpus == 1 ? "" : "s");
                return IDLE_REASON_LOAD;
        }
        if (in->graphical_sessions && !in->seats_idle) {
                reason_set(reason, size, "user active (logind)");
                return IDLE_REASON_USER_ACTIVE;
        }
        reason_set(reason, size, "%s", "");
        return IDLE_REASON_NONE;
}

bool idle_inputs_busy(const IdleConfig *c, const IdleInputs *in, char *reason, size_t reason_size) {
        return idle_busy_reason(c, in, reason, reason_size) != IDLE_REASON_NONE;
}

double idle_quality_loss_percent(double after_ms, double now_ms) {
        if (!(after_ms > 0) || !(now_ms > after_ms))   /* also NaN */
                return 0;
        return (now_ms - after_ms) / after_ms * 100.0;
}

static bool quality_degraded(const IdleConfig *c, const IdleInputs *in) {
        return c->max_quality_loss_percent > 0 && in->worst_profile &&
               in->worst_loss_percent > c->max_quality_loss_percent;
}

/* MinIntervalHours= has not passed since the last run. A last run in the future means the clock was wrong
 * then or is wrong now; it must not block runs until the clock catches up, so it counts as long ago. */
static bool interval_pending(const IdleConfig *c, const IdleInputs *in) {
        return in->last_run_realtime_usec != 0 && c->min_interval_usec > 0 &&
               in->last_run_realtime_usec <= in->now_realtime_usec &&
               in->now_realtime_usec - in->last_run_realtime_usec < c->min_interval_usec;
}

/* The interval applies to runs the policy starts on its own: not to an administrator's request, nor to a
 * paused run waiting to finish. */
static bool interval_applies(const IdleConfig *c, const IdleInputs *in) {
        return !in->requested && !in->run_paused && interval_pending(c, in);
}

IdleReason idle_check(const IdleConfig *c, const IdleInputs *in, char *reason, size_t reason_size) {
        char a[32], b[32];
        IdleReason r;
        uint64_t idle_for;
        bool lifted_by_changes = false, lifted_by_quality = false;

        /* 1. Power first: it is the one the user is most likely to wonder about. */
        if (!in->on_ac)
                return idle_busy_reason(c, in, reason, reason_size);

        /* 2. The interval since the last run, unless the profiles or their layouts changed since. */
        if (interval_applies(c, in)) {
                lifted_by_changes = in->profiles_changed;
                lifted_by_quality = !lifted_by_changes && quality_degraded(c, in);
                if (!lifted_by_changes && !lifted_by_quality) {
                        format_timespan(a, sizeof a, in->now_realtime_usec - in->last_run_realtime_usec,
                                        TIMESPAN_ONE_UNIT);
                        reason_set(reason, reason_size, "ran %s ago (MinIntervalHours=%" PRIu64 ")", a,
                                   c->min_interval_usec / USEC_PER_HOUR);
                        return IDLE_REASON_RECENT_RUN;
                }
        }

        /* 3. Boot quiet time: the page cache is cold and the desktop is still settling. */
        if (in->uptime_usec < c->boot_quiet_usec) {
                format_timespan(a, sizeof a, in->uptime_usec, TIMESPAN_ONE_UNIT);
                format_timespan(b, sizeof b, c->boot_quiet_usec, TIMESPAN_ONE_UNIT);
                reason_set(reason, reason_size, "booted %s ago (BootQuietSec=%s)", a, b);
                return IDLE_REASON_BOOT_QUIET;
        }

        /* 4.-6. Busy right now. */
        r = idle_busy_reason(c, in, reason, reason_size);
        if (r != IDLE_REASON_NONE)
                return r;

        /* 7. Quiet for long enough. busy_since in the future (a caller's bug) counts as busy just now. */
        idle_for = in->now_usec > in->busy_since_usec ? in->now_usec - in->busy_since_usec : 0;
        if (idle_for < c->idle_usec) {
                format_timespan(a, sizeof a, idle_for, TIMESPAN_ONE_UNIT);
                format_timespan(b, sizeof b, c->idle_usec, TIMESPAN_ONE_UNIT);
                reason_set(reason, reason_size, "idle for %s of %s (IdleSec=)", a, b);
                return IDLE_REASON_NOT_IDLE_LONG;
        }

        /* Go; say why before MinIntervalHours=, so that status explains an early run. */
        format_timespan(a, sizeof a, idle_for, TIMESPAN_ONE_UNIT);
        if (lifted_by_changes)
                reason_set(reason, reason_size, "idle for %s; new profiles since the last run", a);
        else if (lifted_by_quality)
                /* IdleStatus is world-readable: no application's path */
                reason_set(reason, reason_size,
                           "idle for %s; layout of %s degraded %.1f%% since the last run (MaxQualityLossPercent=%g)",
                           a, streq(in->worst_profile, "boot") ? "the boot profile" : "an application profile",
                           in->worst_loss_percent, c->max_quality_loss_percent);
        else
                reason_set(reason, reason_size, "idle for %s", a);
        return IDLE_REASON_NONE;
}

bool idle_only_interval_blocks(const IdleConfig *c, const IdleInputs *in) {
        IdleInputs without = *in;

        if (idle_check(c, in, NULL, 0) != IDLE_REASON_RECENT_RUN)
                return false;
        without.requested = true;   /* the same conditions, minus the interval */
        return idle_check(c, &without, NULL, 0) == IDLE_REASON_NONE;
}

IdleVerdict idle_decide(const IdleConfig *c, const IdleInputs *in, char *reason, size_t reason_size) {
        return idle_check(c, in, reason, reason_size) == IDLE_REASON_NONE ? IDLE_GO : IDLE_WAIT;
}

bool idle_device_allowed(const IdleConfig *c, int rotational, char *reason, size_t reason_size) {
        if (rotational == 0 && !c->optimize_non_rotational) {
                reason_set(reason, reason_size, "non-rotational device (OptimizeNonRotational=no)");
                return false;
        }
        reason_set(reason, reason_size, "%s", "");
        return true;
}
