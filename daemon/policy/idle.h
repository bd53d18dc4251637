/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* When may an optimization run start by itself? Readers for the kernel's idle signals (power supplies,
 * PSI, load average, rotational flag) and a pure decision function. Nothing here logs or talks to D-Bus;
 * every path is a parameter so the unit test can feed fixture files. All readers return 0 or a negative
 * errno and write their ret_* argument only on success. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/conf.h"

#define IDLE_SYSFS_POWER_SUPPLY "/sys/class/power_supply"
#define IDLE_PROC_PRESSURE_IO "/proc/pressure/io"
#define IDLE_PROC_LOADAVG "/proc/loadavg"
#define IDLE_SYSFS_ROOT "/sys"

/* Is the machine on external power? The rule (systemd's ConditionACPower=, plus batteries):
 *
 *   Every entry of the directory is looked at, except those whose "scope" file says "Device" (the
 *   batteries of mice, keyboards and headsets, which say nothing about the machine) and those whose
 *   "type" cannot be read.
 *   - An AC supply is any type other than "Battery" ("Mains", "USB", "USB_C", "USB_PD", "UPS", ...).
 *     It is online when its "online" file reads 1 (USB-C ports report 2 for "online, as a power
 *     source": that counts as well, anything but 0 does). An AC supply without a readable "online"
 *     file is ignored.
 *   - A battery is discharging when its "status" file reads "Discharging" (and its "present" file,
 *     if any, is not 0).
 *
 *   1. any AC supply online                     -> true
 *   2. a battery discharging                    -> false
 *   3. an AC supply known, but all are offline  -> false (as ConditionACPower=)
 *   4. otherwise (no AC supply known, e.g. a desktop or VM with an empty directory, and no discharging
 *      battery)                                 -> true
 *
 * A missing directory counts as empty (containers, sysfs not mounted): true. Other errors opening it
 * are returned. */
int power_on_ac(const char *sysfs_power_supply_dir, bool *ret);

/* PSI, e.g. /proc/pressure/io: "some avg10=1.23 avg60=0.50 avg300=0.10 total=123456" (and a "full"
 * line). avg10 is a percentage 0..100; total is in µs. -EBADMSG if the "some" line is malformed or
 * missing; errors from open/read as they come (-ENOENT without CONFIG_PSI, -EOPNOTSUPP with psi=0). */
int psi_read_some_avg10(const char *path, double *ret);
int psi_read_some_total(const char *path, uint64_t *ret_usec);

/* /proc/loadavg: the first field, the 1-minute load average. -EBADMSG if malformed. */
int loadavg_read(const char *path, double *ret_load1);

/* Is the block device dev rotational? sysfs_root is normally "/sys".
 *
 * Looks up <sysfs_root>/dev/block/MAJ:MIN, resolves it, and if it is a partition (it has a "partition"
 * file) goes to the parent disk; then reads the disk's queue/rotational.
 * Loop devices: the flag of the loop device itself is whatever the kernel defaulted it to (recent
 * kernels copy it from the backing block device, older ones say 1), so when loop/backing_file names a
 * file we can stat(), we use the answer for the device that file lives on, recursively (at most 8
 * levels); if that device is not found under sysfs_root (tmpfs, btrfs and other anonymous devices with
 * major 0), the loop device's own queue/rotational is used.
 * Device-mapper and md devices: the kernel already derives their flag from the underlying devices
 * (rotational if any of them is), so their own queue/rotational is used.
 * Returns -ENOENT if dev is unknown to sysfs (e.g. major 0: btrfs, overlayfs, NFS), -EBADMSG if the
 * flag is not 0 or 1. */
int block_device_rotational(const char *sysfs_root, dev_t dev, bool *ret);

typedef struct IdleInputs {
        bool on_ac;
        double io_some_avg10;            /* /proc/pressure/io "some" avg10, percent */
        double load1;                    /* /proc/loadavg */
        unsigned n_cpus;                 /* 0 is taken as 1 */
        bool graphical_sessions;         /* logind has at least one graphical session */
        bool seats_idle;                 /* logind Manager.IdleHint */
        uint64_t uptime_usec;            /* CLOCK_BOOTTIME (or MONOTONIC) since boot */
        uint64_t now_usec;               /* monotonic, same clock as busy_since_usec */
        uint64_t busy_since_usec;        /* last time the inputs were busy, monotonic; initialize it to the time
                                          * watching started, so that IdleSec= is always observed */
        uint64_t last_run_realtime_usec; /* 0 = never */
        uint64_t now_realtime_usec;
        bool profiles_changed;           /* new profiles (never laid out) recorded since the last run */
        /* The profile whose layout degraded most since the last run (NULL: none, or not checked), and by
         * how much its modeled read time grew over the "after" snapshot of that run, in percent (see
         * idle_quality_loss_percent()). Past MaxQualityLossPercent= it lifts MinIntervalHours=. */
        const char *worst_profile;
        double worst_loss_percent;
        bool requested;                  /* an administrator queued a run (optimize --when-idle): MinIntervalHours=
                                          * and profile changes do not matter, the other conditions do */
        bool run_paused;                 /* a run that was paused waits to be resumed: MinIntervalHours= is about
                                          * starting runs, not finishing them */
} IdleInputs;

typedef struct IdleConfig {
        uint64_t idle_usec;              /* IdleSec= */
        uint64_t min_interval_usec;      /* MinIntervalHours= */
        uint64_t boot_quiet_usec;        /* BootQuietSec= */
        double max_io_pressure;          /* MaxIOPressure=, percent */
        double max_load_per_cpu;         /* MaxLoadPerCPU= */
        double max_quality_loss_percent; /* MaxQualityLossPercent=, 0 = off */
        bool optimize_non_rotational;    /* OptimizeNonRotational= */
} IdleConfig;

void idle_config_from_config(IdleConfig *ic, const Config *c);

typedef enum IdleVerdict {
        IDLE_GO,
        IDLE_WAIT,
        _IDLE_VERDICT_MAX,
        _IDLE_VERDICT_INVALID = -EINVAL,
} IdleVerdict;

/* Why a run may not start, in the order idle_decide() checks them: the first failing one is reported.
 * Long-term blockers come first, so that status shows what keeps a run away longest. */
typedef enum IdleReason {
        IDLE_REASON_NONE,          /* all conditions hold: go */
        IDLE_REASON_ON_BATTERY,    /* 1. "on battery" */
        IDLE_REASON_RECENT_RUN,    /* 2. "ran 3 h ago (MinIntervalHours=24)", unless profiles changed, the
                                    *    layout quality degraded past MaxQualityLossPercent=, a run is
                                    *    paused, or the run was requested */
        IDLE_REASON_BOOT_QUIET,    /* 3. "booted 4 min ago (BootQuietSec=10 min)" */
        IDLE_REASON_IO_BUSY,       /* 4. "I/O busy (some avg10 12.3% > 10%)" */
        IDLE_REASON_LOAD,          /* 5. "load 3.1 > 1.0 (MaxLoadPerCPU=0.5, 2 CPUs)" */
        IDLE_REASON_USER_ACTIVE,   /* 6. "user active (logind)": graphical sessions exist and are not idle */
        IDLE_REASON_NOT_IDLE_LONG, /* 7. "idle for 2 min of 5 min (IdleSec=)" */
        _IDLE_REASON_MAX,
        _IDLE_REASON_INVALID = -EINVAL,
} IdleReason;

/* Machine-readable names: "none", "on-battery", "recent-run", "boot-quiet", "io-busy", "load",
 * "user-active", "not-idle-long-enough"; NULL if out of range. */
const char *idle_reason_to_string(IdleReason r);

/* The decision with its reason code; reason (may be NULL) gets the human text, or "idle for 6 min" on
 * IDLE_REASON_NONE. When the run may start only because something lifted MinIntervalHours=, the text
 * says what: "idle for 6 min; new profiles since the last run" or "idle for 6 min; layout of 'boot'
 * degraded 40.0% since the last run (MaxQualityLossPercent=25)". */
IdleReason idle_check(const IdleConfig *c, const IdleInputs *in, char *reason, size_t reason_size);

/* True when MinIntervalHours= is the one thing keeping a run from starting: every other condition holds.
 * That is when the layout quality is worth checking (it costs a FIEMAP of every profile file). */
bool idle_only_interval_blocks(const IdleConfig *c, const IdleInputs *in);

/* How much worse a layout's modeled read time now_ms is than after_ms (right after the last run), in
 * percent; 0 when it is not worse or after_ms is not positive (no usable snapshot). */
double idle_quality_loss_percent(double after_ms, double now_ms);

/* IDLE_GO, or IDLE_WAIT with a human reason (see IdleReason for the order and the texts). */
IdleVerdict idle_decide(const IdleConfig *c, const IdleInputs *in, char *reason, size_t reason_size);

/* "Busy now?", for the busy_since_usec tracking and for pausing a running optimization between files:
 * on battery, I/O pressure above MaxIOPressure=, load above MaxLoadPerCPU= × CPUs, or graphical
 * sessions that logind does not report idle. Does not look at the clocks. reason gets the first of
 * these (in that order), or "" if not busy. */
bool idle_inputs_busy(const IdleConfig *c, const IdleInputs *in, char *reason, size_t reason_size);

/* Whether files on a device of this kind may be relocated. rotational is 1, 0, or a negative errno
 * when unknown (treated as rotational: the flag is missing for devices sysfs does not describe, and
 * ext4 on them is rare enough). On false, reason gets "non-rotational device (OptimizeNonRotational=no)". */
bool idle_device_allowed(const IdleConfig *c, int rotational, char *reason, size_t reason_size);

