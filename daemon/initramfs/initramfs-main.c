/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seekless-initramfs: the initramfs stage (seekless-initramfs(8)). Run by initramfs-tools' init-bottom
 * script with the real root mounted at ${rootmnt}, before the switch: the early pass for the files that
 * run from the first instant, then the boot profile read ahead. Never the reason a boot fails or waits
 * long: always exits 0, within its hard limit, and writes what it did to /run/seekless/initramfs.status. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/macro.h"
#include "common/time-util.h"
#include "config.h"
#include "fs/mounts.h"
#include "initramfs/initramfs-early.h"
#include "initramfs/initramfs-prefetch.h"
#include "initramfs/initramfs-status.h"
#include "initramfs/initramfs-util.h"
#include "policy/conf.h"
#include "store/db.h"
#include "store/move-reason.h"

#define EXT4_SUPER_MAGIC_FS 0xEF53
#define HARD_GRACE_SEC 5                /* after the limit's graceful stop, before the hard exit */

static const char *arg_root = "/root";
static const char *arg_cmdline = "/proc/cmdline";
static const char *arg_status = INITRAMFS_STATUS_PATH;
static const char *arg_state_dir = NULL;
static const char *arg_config = NULL;
static uint64_t arg_budget_usec = 2 * USEC_PER_SEC;
static unsigned arg_limit_sec = 20;
static bool arg_stderr = false;

/* What the alarm's handler writes, made before anything can take long: one status for each phase the
 * stage may be in (phase), as the early pass's outcome differs. */
typedef enum Phase {
        PHASE_BEFORE,                   /* the early pass not begun (or not to run) */
        PHASE_EARLY,                    /* the early pass under way: the root may be read-write */
        PHASE_AFTER,                    /* the early pass over, the read-ahead under way */
        _PHASE_MAX,
} Phase;
static char hard_text[_PHASE_MAX][1024], hard_tmp[4096], hard_path[4096], hard_log[4096], hard_line[256];
static size_t hard_len[_PHASE_MAX], hard_line_len;
static volatile sig_atomic_t n_alarms, phase;

static void on_alarm(int sig) {
        static const char line[] = "<11>seekless-initramfs: stopped at its hard time limit; the boot went on\n";
        struct itimerval t = { .it_value = { .tv_sec = HARD_GRACE_SEC } };
        int fd;

        if (n_alarms++ == 0) {
                /* the graceful stop: the early pass takes SIGTERM from its signalfd (blocked here), stops
                 * between steps, checkpoints and makes the root read-only again */
                (void) kill(getpid(), SIGTERM);
                (void) setitimer(ITIMER_REAL, &t, NULL);
                return;
        }
        fd = open(hard_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd >= 0) {
                (void) !write(fd, hard_text[phase], hard_len[phase]);
                (void) close(fd);
                (void) rename(hard_tmp, hard_path);
        }
        if (hard_log[0]) {
                fd = open(hard_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
                if (fd >= 0) {
                        (void) !write(fd, hard_line, hard_line_len);
                        (void) close(fd);
                }
        }
        fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd >= 0) {
                (void) !write(fd, line, sizeof line - 1);
                (void) close(fd);
        }
        _exit(EXIT_SUCCESS);
}

static void help(void) {
        printf("%s [OPTIONS...]\n\n"
               "The initramfs stage: before the switch to the real root, move the files the last runs left\n"
               "queued because they were running, and read the boot profile ahead.\n\n"
               "  -h --help             Show this help\n"
               "     --version          Show package version\n"
               "     --root=DIR         Where the real root is mounted (default /root)\n"
               "     --budget-ms=N      Time for the read-ahead (default 2000)\n"
               "     --limit-sec=N      Hard time limit of the whole stage (default 20)\n"
               "     --status=FILE      Where to write what it did (default " INITRAMFS_STATUS_PATH ")\n"
               "     --cmdline=FILE     The kernel command line (default /proc/cmdline)\n"
               "     --state-dir=DIR    The database's directory (default ROOT" STATE_DIR ")\n"
               "     --config=FILE      The configuration (default ROOT" CONFIG_FILE ")\n"
               "     --stderr           Log to stderr, not to the kernel log\n"
               "\nSee the seekless-initramfs(8) man page for details.\n",
               program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_ROOT,
                ARG_BUDGET_MS,
                ARG_LIMIT_SEC,
                ARG_STATUS,
                ARG_CMDLINE,
                ARG_STATE_DIR,
                ARG_CONFIG,
                ARG_STDERR,
        };
        static const struct option options[] = {
                { "help",      no_argument,       NULL, 'h'           },
                { "version",   no_argument,       NULL, ARG_VERSION   },
                { "root",      required_argument, NULL, ARG_ROOT      },
                { "budget-ms", required_argument, NULL, ARG_BUDGET_MS },
                { "limit-sec", required_argument, NULL, ARG_LIMIT_SEC },
                { "status",    required_argument, NULL, ARG_STATUS    },
                { "cmdline",   required_argument, NULL, ARG_CMDLINE   },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "config",    required_argument, NULL, ARG_CONFIG    },
                { "stderr",    no_argument,       NULL, ARG_STDERR    },
                {}
        };
        unsigned v;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("seekless-initramfs %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_ROOT:
                        arg_root = optarg;
                        break;
                case ARG_BUDGET_MS:
                        if (config_parse_unsigned(optarg, 0, 600000, &v) < 0)
                                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "--budget-ms= expects 0..600000: %s", optarg);
                        arg_budget_usec = (uint64_t) v * USEC_PER_MSEC;
                        break;
                case ARG_LIMIT_SEC:
                        if (config_parse_unsigned(optarg, 1, 600, &v) < 0)
                                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "--limit-sec= expects 1..600: %s", optarg);
                        arg_limit_sec = v;
                        break;
                case ARG_STATUS:
                        arg_status = optarg;
                        break;
                case ARG_CMDLINE:
                        arg_cmdline = optarg;
                        break;
                case ARG_STATE_DIR:
                        arg_state_dir = optarg;
                        break;
                case ARG_CONFIG:
                        arg_config = optarg;
                        break;
                case ARG_STDERR:
                        arg_stderr = true;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        return -EINVAL;
                }
        if (optind < argc)
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "%s takes no arguments", program_invocation_short_name);
        return 1;
}

/* The status, written and logged. */
static void finish(InitramfsStatus *s, uint64_t t0) {
        struct itimerval off = {};
        sigset_t alarm;
        int r;

        /* the limit no longer applies: its status must not replace this one */
        sigemptyset(&alarm);
        sigaddset(&alarm, SIGALRM);
        (void) sigprocmask(SIG_BLOCK, &alarm, NULL);
        (void) setitimer(ITIMER_REAL, &off, NULL);

        s->total_usec = now_usec(CLOCK_MONOTONIC) - t0;
        r = initramfs_status_write(arg_status, s);
        if (r < 0)
                log_warning_errno(r, "Cannot write %s: %m", arg_status);
        log_notice("%s%s%s", s->summary, s->early_summary[0] ? "; early pass: " : "", s->early_summary);
}

static void say(char *buf, size_t size, const char *format, ...) _printf_(3, 4);
static void say(char *buf, size_t size, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        (void) vsnprintf(buf, size, format, ap);
        va_end(ap);
}

/* Why the store cannot be read, as the status says it. */
static const char *db_refusal(int r) {
        switch (r) {
        case -ENOENT:
                return "no database on the root filesystem (none yet, or /var is a filesystem of its own)";
        case -EPROTO:
                return "the database is from a newer seekless";
        case -ESTALE:
                return "the database is from an older seekless (seeklessd updates it when it starts)";
        case -EUCLEAN:
                return "the database's write-ahead log holds changes not yet written back (seeklessd did not stop cleanly): not read this boot";
        case -EBADMSG:
                return "the database is corrupt or not seekless's (seeklessd moves it aside)";
        default:
                return NULL;
        }
}

/* How many files wait for the early pass on the filesystem fsid. */
static int queued_on(Db *db, uint64_t fsid, uint64_t *ret) {
        DbRunFile *files = NULL;
        size_t n = 0;
        uint64_t k = 0;
        int r;

        r = db_retry_entries(db, MOVE_REASON_RUNNING, &files, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                bool again = false;

                if (files[i].file.key.fsid != fsid)
                        continue;
                for (size_t j = 0; j < i && !again; j++)
                        again = files[j].file.id == files[i].file.id;
                k += !again;
        }
        db_run_files_free(files, n);
        *ret = k;
        return 0;
}

static void run(uint64_t t0) {
        _cleanup_free_ char *state_dir = NULL, *config = NULL, *dropins = NULL, *db_path = NULL;
        _cleanup_(db_freep) Db *db = NULL;
        InitramfsStatus s = {};
        InitramfsMode mode;
        Config c;
        bool force_fsck = false;
        char cmdline[4096], bad[64];
        uint64_t fsid, queued = 0, limit_usec = (uint64_t) arg_limit_sec * USEC_PER_SEC;
        struct statfs sf;
        const char *why;
        int r;

        r = read_small_file(arg_cmdline, cmdline, sizeof cmdline);
        if (r < 0)
                cmdline[0] = 0;
        mode = initramfs_mode_from_cmdline(cmdline, &force_fsck, bad, sizeof bad);
        if (bad[0])
                log_warning("%s: unknown value, the stage stays on (yes, prefetch or no)", bad);
        if (mode == INITRAMFS_OFF) {
                strcpy(s.outcome, "off");
                say(s.summary, sizeof s.summary, "switched off on the kernel command line (seekless.initramfs=no)");
                strcpy(s.early_outcome, "off");
                return finish(&s, t0);
        }

        if (statfs(arg_root, &sf) < 0 || fsid_of_path(arg_root, &fsid) < 0) {
                strcpy(s.outcome, "skipped");
                say(s.summary, sizeof s.summary, "no root filesystem at %s (%m)", arg_root);
                return finish(&s, t0);
        }
        s.root_fsid = fsid;
        if (sf.f_type != EXT4_SUPER_MAGIC_FS) {
                strcpy(s.outcome, "skipped");
                say(s.summary, sizeof s.summary, "the root filesystem is not ext4");
                return finish(&s, t0);
        }
        if ((arg_state_dir ? !(state_dir = strdup(arg_state_dir)) : asprintf(&state_dir, "%s%s", arg_root, STATE_DIR) < 0) ||
            (arg_config ? !(config = strdup(arg_config)) : asprintf(&config, "%s%s", arg_root, CONFIG_FILE) < 0) ||
            asprintf(&dropins, "%s.d", config) < 0 || asprintf(&db_path, "%s/seekless.db", state_dir) < 0) {
                strcpy(s.outcome, "failed");
                say(s.summary, sizeof s.summary, "out of memory");
                return finish(&s, t0);
        }
        config_set_defaults(&c);
        (void) config_load(&c, config, dropins);        /* what is wrong in it is logged with file:line */

        r = db_open_readonly(db_path, &db);
        if (r < 0) {
                why = db_refusal(r);
                strcpy(s.outcome, why ? "skipped" : "failed");
                if (why)
                        say(s.summary, sizeof s.summary, "%s", why);
                else {
                        errno = -r;
                        say(s.summary, sizeof s.summary, "cannot read %s (%m)", db_path);
                }
                return finish(&s, t0);
        }

        /* 1. the early pass, when files wait for it on the root */
        r = queued_on(db, fsid, &queued);
        if (r < 0)
                log_warning_errno(r, "Cannot read the early pass's queue, no early pass: %m");
        s.early_queued = queued;
        if (mode == INITRAMFS_PREFETCH_ONLY) {
                strcpy(s.early_outcome, "off");
                say(s.early_summary, sizeof s.early_summary, "switched off on the kernel command line (seekless.initramfs=prefetch)");
        } else if (r < 0) {
                strcpy(s.early_outcome, "skipped");
                errno = -r;
                say(s.early_summary, sizeof s.early_summary, "its queue cannot be read (%m)");
        } else if (queued == 0) {
                strcpy(s.early_outcome, "nothing-queued");
                say(s.early_summary, sizeof s.early_summary, "no file queued on the root filesystem");
        } else {
                InitramfsEarlyResult e;
                uint64_t te = now_usec(CLOCK_MONOTONIC), half = t0 + limit_usec / 2;

                db = db_free(db);       /* the pass opens it for writing */
                phase = PHASE_EARLY;
                r = initramfs_early(&(InitramfsEarlyOptions) {
                                .root = arg_root,
                                .state_dir = state_dir,
                                /* until half the limit at most: the graceful stop and the remount get the
                                 * rest; none once the first alarm came */
                                .budget_usec = n_alarms > 0 || te >= half ? 0 : MIN(c.early_budget_usec, half - te),
                                .force_fsck = force_fsck,
                        }, &e);
                phase = PHASE_AFTER;
                s.early_usec = now_usec(CLOCK_MONOTONIC) - te;
                s.early_moved = e.moved;
                if (e.skipped) {
                        strcpy(s.early_outcome, "skipped");
                        say(s.early_summary, sizeof s.early_summary, "%" PRIu64 " queued file(s) left for seekless-early.service: %s",
                            queued, e.skipped);
                } else if (r < 0) {
                        strcpy(s.early_outcome, "failed");
                        errno = -r;
                        say(s.early_summary, sizeof s.early_summary, "failed (%m)%s; moved %" PRIu64 " of %" PRIu64 " queued file(s)",
                            e.left_rw ? ", the root filesystem left read-write" : "", e.moved, s.early_queued);
                } else {
                        strcpy(s.early_outcome, e.stopped ? "stopped" : "moved");
                        say(s.early_summary, sizeof s.early_summary, "moved %" PRIu64 " of %" PRIu64 " queued file(s) in %.1f s%s",
                            e.moved, s.early_queued, s.early_usec / 1e6,
                            e.stopped ? " (stopped at its budget; the rest waits)" : "");
                }
                r = db_open_readonly(db_path, &db);
                if (r < 0) {
                        strcpy(s.outcome, "failed");
                        errno = -r;
                        say(s.summary, sizeof s.summary, "cannot read %s after the early pass (%m)", db_path);
                        return finish(&s, t0);
                }
        }

        /* 2. the boot profile read ahead, within its budget and the limit */
        if (!c.prefetch || !c.prefetch_boot) {
                strcpy(s.outcome, "done");
                say(s.summary, sizeof s.summary, "no read-ahead (%s=no)", !c.prefetch ? "Prefetch" : "PrefetchBoot");
        } else {
                uint64_t tp = now_usec(CLOCK_MONOTONIC), end = t0 + limit_usec - MIN(limit_usec / 4, 2 * USEC_PER_SEC);
                const char *skipped = NULL;
                PrefetchStats st;

                r = initramfs_prefetch(&(InitramfsPrefetchOptions) {
                                .root = arg_root,
                                .db = db,
                                .deadline_usec = MIN(tp + arg_budget_usec, MAX(end, tp)),
                                .max_bytes = (uint64_t) c.prefetch_max_mib << 20,
                                .min_available_bytes = (uint64_t) c.prefetch_min_available_mib << 20,
                                .non_rotational = c.prefetch_non_rotational,
                        }, &st, &skipped);
                s.prefetch_usec = now_usec(CLOCK_MONOTONIC) - tp;
                if (r < 0) {
                        strcpy(s.outcome, "failed");
                        errno = -r;
                        say(s.summary, sizeof s.summary, "read-ahead failed (%m)");
                } else if (skipped) {
                        strcpy(s.outcome, "skipped");
                        say(s.summary, sizeof s.summary, "no read-ahead: %s", skipped);
                } else {
                        s.prefetch_bytes = st.bytes_asked;
                        s.prefetch_cached_bytes = st.bytes_cached;
                        strcpy(s.outcome, "done");
                        say(s.summary, sizeof s.summary, "read ahead %.1f MiB of the boot profile in %.2f s (%s), %.1f MiB cached already",
                            st.bytes_asked / 1048576.0, s.prefetch_usec / 1e6, prefetch_end_to_string(st.end),
                            st.bytes_cached / 1048576.0);
                }
        }
        finish(&s, t0);
}

int main(int argc, char *argv[]) {
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        /* SA_RESTART: an alarm that lands on the pass's thread must not fail its calls with EINTR */
        struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
        struct itimerval t = {};
        sigset_t mask;
        int r;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (!arg_stderr) {
                _cleanup_free_ char *dir = strdup(arg_status), *path = NULL;
                char *slash = dir ? strrchr(dir, '/') : NULL;

                /* every line to a file beside the status; the kernel log gets the summary and what went
                 * wrong (its rate limit would drop the rest, doc/kernel.md §10) */
                if (slash && slash != dir) {
                        *slash = 0;
                        (void) mkdir(dir, 0755);
                }
                if (slash && asprintf(&path, "%s/initramfs.log", slash == dir ? "" : dir) >= 0) {
                        (void) log_open_file(path);
                        (void) snprintf(hard_log, sizeof hard_log, "%s", path);
                }
                if (log_open_kmsg(program_invocation_short_name, LOG_NOTICE) < 0)
                        log_open();
        }

        /* before any thread: the early pass's stop watcher takes them from a signalfd */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                log_warning_errno(-errno, "Cannot block SIGTERM/SIGINT: %m");

        /* the hard limit's status, ready before anything can take long */
        hard_line_len = (size_t) MAX(0, snprintf(hard_line, sizeof hard_line,
                                                 "<3>stopped at its hard time limit (%u s + %u s); the boot went on\n",
                                                 arg_limit_sec, HARD_GRACE_SEC));
        for (Phase ph = 0; ph < _PHASE_MAX; ph++)
                hard_len[ph] = (size_t) MAX(0, snprintf(hard_text[ph], sizeof hard_text[ph],
                        "OUTCOME=stopped\nSUMMARY=stopped at its hard time limit (%u s + %u s); the boot went on\n%s",
                        arg_limit_sec, HARD_GRACE_SEC,
                        ph == PHASE_EARLY ? "EARLY_OUTCOME=stopped\nEARLY_SUMMARY=stopped at the hard limit with the root "
                                            "read-write (the init-bottom script makes it read-only); what it did not move waits\n" : ""));
        (void) snprintf(hard_path, sizeof hard_path, "%s", arg_status);
        (void) snprintf(hard_tmp, sizeof hard_tmp, "%s.tmp", arg_status);
        sigemptyset(&sa.sa_mask);
        t.it_value.tv_sec = arg_limit_sec;
        if (sigaction(SIGALRM, &sa, NULL) < 0 || setitimer(ITIMER_REAL, &t, NULL) < 0) {
                log_error_errno(-errno, "Cannot set its time limit, doing nothing: %m");
                return EXIT_SUCCESS;
        }

        run(t0);
        return EXIT_SUCCESS;
}
