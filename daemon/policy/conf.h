/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* [Record] Recorder=: what records launches' pages. */
typedef enum RecorderKind {
        RECORDER_FANOTIFY,      /* fanotify, and the page-cache tracepoint through tracefs */
        RECORDER_BPF,           /* launches' pages with BPF; the tracepoint where it does not load (a warning) */
        RECORDER_AUTO,          /* the same, the fallback logged as information */
        _RECORDER_KIND_MAX,
        _RECORDER_KIND_INVALID = -22,   /* -EINVAL */
} RecorderKind;

const char *recorder_kind_to_string(RecorderKind k);
RecorderKind recorder_kind_from_string(const char *s);

/* seekless.conf(5). Every key has a default that applies when the key is absent or its value is bad. */
typedef struct Config {
        /* [Record] */
        uint64_t boot_tail_usec;        /* BootTailSec=, default 30 s */
        uint64_t boot_window_usec;      /* BootWindowSec=, default 120 s (also the hard cap) */
        uint64_t launch_window_usec;    /* LaunchWindowSec=, default 10 s */
        unsigned max_launches_per_boot; /* MaxLaunchesPerBoot=, default 3 */
        unsigned min_launch_files;      /* MinLaunchFiles=, default 2 */
        unsigned keep_boots;            /* KeepBoots=, default 10 */
        unsigned keep_launches;         /* KeepLaunches=, default 5 */
        unsigned max_profiles;          /* MaxProfiles=, default 512: app profiles kept */
        unsigned max_profiles_per_user; /* MaxProfilesPerUser=, default 64: app profiles per user (uid >= 1000) */
        unsigned max_session_files;     /* MaxSessionFiles=, default 65536: files a session takes */
        double boot_user_share;         /* BootUserShare=, percent, default 25: of the boot session's caps,
                                         * what users' processes' reads may take */
        RecorderKind recorder;          /* Recorder=, default auto */

        /* [Optimize] */
        unsigned max_hot_set_mib;       /* MaxHotSetMiB=, default 1024 (and never more than 5% of the fs) */
        unsigned max_file_mib;          /* MaxFileMiB=, default 512 */
        uint64_t min_file_age_usec;     /* MinFileAgeSec=, default 600 s */
        unsigned rate_limit_mibps;      /* RateLimitMiBps=, default 0 = unlimited */
        uint64_t early_budget_usec;     /* EarlyBudgetSec=, default 2 s: the early-boot pass's time budget */
        bool make_room;                 /* MakeRoom=, default yes: clear a low window for the donor */

        /* [Idle] */
        uint64_t idle_usec;             /* IdleSec=, default 300 s */
        unsigned min_interval_hours;    /* MinIntervalHours=, default 24 */
        uint64_t boot_quiet_usec;       /* BootQuietSec=, default 600 s */
        double max_io_pressure;         /* MaxIOPressure=, percent, default 10 */
        double max_load_per_cpu;        /* MaxLoadPerCPU=, default 0.5 */
        double max_quality_loss_percent; /* MaxQualityLossPercent=, default 25, 0 = off */
        bool optimize_non_rotational;   /* OptimizeNonRotational=, default no */

        /* [Prefetch] */
        bool prefetch;                  /* Prefetch=, default yes */
        unsigned prefetch_max_mib;      /* PrefetchMaxMiB=, default 512: read ahead per plan at most */
        unsigned prefetch_min_available_mib; /* PrefetchMinAvailableMiB=, default 256: MemAvailable floor */
        double prefetch_max_memory_pressure; /* PrefetchMaxMemoryPressure=, percent, default 10 */
        uint64_t prefetch_budget_usec;  /* PrefetchBudgetSec=, default 10 s: to issue a plan */
        bool prefetch_non_rotational;   /* PrefetchNonRotational=, default no */
        bool prefetch_launches;         /* PrefetchLaunches=, default yes (where launches are recorded with BPF) */
        bool prefetch_boot;             /* PrefetchBoot=, default yes */
} Config;

void config_set_defaults(Config *c);

/* Load main_path (missing is fine), then every "*.conf" in dropin_dir (may be NULL or missing) in
 * lexical order, later files overriding earlier ones. Unknown sections/keys and bad values are logged
 * as "FILE:LINE: ..., ignoring" warnings and skipped; they never fail the load. A file that exists but
 * cannot be read (any error but ENOENT) is logged as a warning naming the file and errno and skipped.
 * Returns 0, or -ENOMEM (logged) if memory ran out. */
int config_load(Config *c, const char *main_path, const char *dropin_dir);

/* Value parsers, exported for the unit test. Return 0 or -EINVAL/-ERANGE and never touch *ret on error. */
int config_parse_sec(const char *s, uint64_t *ret_usec);  /* "30", "30s", "2min", "1h", "500ms" */
int config_parse_unsigned(const char *s, unsigned min, unsigned max, unsigned *ret);
/* "0.5", "10", ".25", "3." is not; no sign, exponent or blanks. Locale-independent. */
int config_parse_double(const char *s, double min, double max, double *ret);
/* Like config_parse_double(), with an optional "%" right after the number: "10", "2.5%". */
int config_parse_percent(const char *s, double min, double max, double *ret);
/* yes/no, true/false, on/off, 1/0, case-insensitive. */
int config_parse_bool(const char *s, bool *ret);
