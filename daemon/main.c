/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessd: argv, config, manager start, event loop. Everything else lives in manager*.c. */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "record/boot-collect.h"
#include "common/bus-names.h"
#include "config.h"
#include "common/log.h"
#include "initramfs/initramfs-status.h"
#include "relocate/early.h"
#include "manager/manager.h"

static char *arg_config = NULL;
static char *arg_state_dir = NULL;
static const char *arg_run_dir = RUN_DIR;
static const char *arg_tracefs = NULL;
static char **arg_filesystems = NULL;
static size_t arg_n_filesystems = 0;
static char *arg_boot_id = NULL;
static bool arg_early_pass = false;

static void help(void) {
        printf("%s [OPTIONS...]\n\n"
               "Record which files each boot and application launch reads, in order.\n\n"
               "  -h --help               Show this help\n"
               "     --version            Show package version\n"
               "     --config=FILE        Read FILE and FILE.d/*.conf instead of\n"
               "                          " CONFIG_FILE "\n"
               "     --state-dir=DIR      Keep the database in DIR (default " STATE_DIR ")\n"
               "     --run-dir=DIR        Take the boot collector's record from DIR (default\n"
               "                          " RUN_DIR ")\n"
               "     --filesystem=PATH    Record only the filesystem containing PATH (repeatable)\n"
               "     --boot-id=ID         Use ID (32 hex digits) as the boot id (for tests)\n"
               "     --tracefs=PATH       Where tracefs is mounted (default /sys/kernel/tracing); page\n"
               "                          recording is off when it is not there\n"
               "     --log-level=LEVEL    debug, info, notice, warning or err\n"
               "     --early-pass         Move the files earlier runs left because they were running\n"
               "                          executables, within EarlyBudgetSec=, then exit\n"
               "\nSee the seeklessd(8) man page for details.\n",
               program_invocation_short_name);
}

/* The database lists which files everyone's programs read: another user able to write into its directory
 * could replace it, or read it through a link of theirs. */
static int check_state_dir(int fd, const char *path) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return log_error_errno(-errno, "Failed to stat state directory %s: %m", path);
        if (st.st_uid != geteuid())
                return log_error_errno(SYNTHETIC_ERRNO(EPERM),
                                       "State directory %s belongs to uid %u, not to us (uid %u): refusing to use it",
                                       path, (unsigned) st.st_uid, (unsigned) geteuid());
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return log_error_errno(SYNTHETIC_ERRNO(EPERM),
                                       "State directory %s is writable by others (mode %04o): refusing to use it",
                                       path, (unsigned) (st.st_mode & 07777));
        return 0;
}

static int parse_log_level(const char *s) {
        static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(s, names[i]))
                        return (int) i;
        return -EINVAL;
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_CONFIG,
                ARG_STATE_DIR,
                ARG_RUN_DIR,
                ARG_FILESYSTEM,
                ARG_BOOT_ID,
                ARG_LOG_LEVEL,
                ARG_EARLY_PASS,
                ARG_TRACEFS,
        };
        static const struct option options[] = {
                { "help",       no_argument,       NULL, 'h'            },
                { "version",    no_argument,       NULL, ARG_VERSION    },
                { "config",     required_argument, NULL, ARG_CONFIG     },
                { "state-dir",  required_argument, NULL, ARG_STATE_DIR  },
                { "run-dir",    required_argument, NULL, ARG_RUN_DIR    },
                { "filesystem", required_argument, NULL, ARG_FILESYSTEM },
                { "boot-id",    required_argument, NULL, ARG_BOOT_ID    },
                { "log-level",  required_argument, NULL, ARG_LOG_LEVEL  },
                { "early-pass", no_argument,       NULL, ARG_EARLY_PASS },
                { "tracefs",    required_argument, NULL, ARG_TRACEFS    },
                {}
        };
        int c, l;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("seeklessd %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_CONFIG:
                        arg_config = optarg;
                        break;
                case ARG_STATE_DIR:
                        arg_state_dir = optarg;
                        break;
                case ARG_RUN_DIR:
                        arg_run_dir = optarg;
                        break;
                case ARG_FILESYSTEM: {
                        char **n = realloc(arg_filesystems, (arg_n_filesystems + 2) * sizeof *n);
                        if (!n)
                                return log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory");
                        arg_filesystems = n;
                        arg_filesystems[arg_n_filesystems] = realpath(optarg, NULL);
                        if (!arg_filesystems[arg_n_filesystems])
                                return log_error_errno(-errno, "--filesystem=%s: %m", optarg);
                        arg_filesystems[++arg_n_filesystems] = NULL;
                        break;
                }
                case ARG_BOOT_ID:
                        if (strlen(optarg) != 32 || strspn(optarg, "0123456789abcdef") != 32)
                                return log_error_errno(SYNTHETIC_ERRNO(EINVAL),
                                                       "--boot-id= expects 32 lowercase hex digits: %s", optarg);
                        arg_boot_id = optarg;
                        break;
                case ARG_LOG_LEVEL:
                        l = parse_log_level(optarg);
                        if (l < 0)
                                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "Unknown log level: %s", optarg);
                        log_set_max_level(l);
                        break;
                case ARG_EARLY_PASS:
                        arg_early_pass = true;
                        break;
                case ARG_TRACEFS:
                        if (optarg[0] != '/')
                                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "--tracefs= expects an absolute path: %s", optarg);
                        arg_tracefs = optarg;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "Unhandled option");
                }
        if (optind < argc)
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "%s takes no arguments.", program_invocation_short_name);
        return 1;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void) manager_reload_config(userdata);
        return 0;
}

static int run(int argc, char *argv[]) {
        _cleanup_close_ int state_lock = -EBADF;        /* declared first: released last */
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_free_ char *dropins = NULL;
        const char *config, *state;
        int r;

        log_open();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;
        /* before the first file we read (the config): a boot collector leaves our reads out */
        r = boot_collect_exclude_self(arg_run_dir);
        if (r < 0)
                log_debug_errno(r, "Failed to list ourselves in %s/" BOOT_COLLECT_EXCLUDE_FILE ": %m", arg_run_dir);
        config = arg_config ?: CONFIG_FILE;

        /* Raise the soft fd limit to the hard one: running out of descriptors would make the kernel deny
         * execs whose permission events it cannot hand us. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) >= 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }

        /* Read leases (the planner's and mover's "is anyone writing this?" probe) make us the owner of the
         * lease-break signal, SIGIO, whose default action kills. A writer opening a file during the probe
         * would kill the daemon; ignored, the lease still breaks as it should. Before any thread exists. */
        if (signal(SIGIO, SIG_IGN) == SIG_ERR)
                return log_error_errno(-errno, "Failed to ignore SIGIO: %m");
        /* Whose default action would also end the daemon without saving the open sessions: a write to a
         * closed pipe is an error return instead, and SIGUSR1/2 mean nothing here (seeklessd(8)). */
        if (signal(SIGPIPE, SIG_IGN) == SIG_ERR || signal(SIGUSR1, SIG_IGN) == SIG_ERR ||
            signal(SIGUSR2, SIG_IGN) == SIG_ERR)
                return log_error_errno(-errno, "Failed to ignore SIGPIPE/SIGUSR1/SIGUSR2: %m");

        /* Block the signals sd-event handles before any thread exists, so that the exec watcher thread
         * inherits the mask and SIGTERM always reaches the event loop (which then saves open sessions).
         * The early pass takes SIGTERM and SIGINT from a signalfd of its own (early-stop.h); SIGHUP stays
         * blocked there: it reads its configuration once. */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(-errno, "Failed to block signals: %m");

        r = seekless_bus_errors_register();
        if (r < 0)
                return log_error_errno(r, "Failed to register bus errors: %m");

        r = manager_new(&m);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate manager: %m");

        if (asprintf(&dropins, "%s.d", config) < 0)
                return log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory");
        r = config_load(&m->config, config, dropins);
        if (r < 0)
                return r;
        m->config_path = strdup(config);
        m->config_dropins = TAKE_PTR(dropins);
        if (!m->config_path)
                return log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory");

        /* not from the environment: what a root daemon writes must not follow an inherited variable (the
         * unit's StateDirectory= makes this very directory) */
        state = arg_state_dir ?: STATE_DIR;
        m->state_dir = strdup(state);
        if (!m->state_dir || asprintf(&m->db_path, "%s/seekless.db", m->state_dir) < 0)
                return log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory");
        /* profiles are lists of other users' file paths: keep them private */
        umask(0077);
        if (mkdir(m->state_dir, 0700) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Failed to create state directory %s: %m", m->state_dir);
        if (access(m->state_dir, W_OK) < 0)
                return log_error_errno(-errno, "State directory %s is not writable: %m", m->state_dir);
        /* One seeklessd (daemon or early pass) per state directory, before anything in it is touched:
         * two would both record every launch and both relocate. Held until exit. */
        state_lock = open(m->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (state_lock < 0)
                return log_error_errno(-errno, "Failed to open state directory %s: %m", m->state_dir);
        r = check_state_dir(state_lock, m->state_dir);
        if (r < 0)
                return r;
        if (flock(state_lock, LOCK_EX | LOCK_NB) < 0) {
                if (errno == EWOULDBLOCK)
                        return log_error_errno(SYNTHETIC_ERRNO(EBUSY),
                                               "Another seeklessd is using the state directory %s; exiting",
                                               m->state_dir);
                return log_error_errno(-errno, "Failed to lock state directory %s: %m", m->state_dir);
        }
        if (arg_filesystems) {
                const char *failed = NULL;

                /* by identity, now: a later unmount must not turn the path into the root filesystem */
                m->only_filesystems = calloc(1, sizeof *m->only_filesystems);
                if (!m->only_filesystems)
                        return log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory");
                r = filesystem_pins_make(arg_filesystems, m->only_filesystems, &failed);
                if (r < 0)
                        return log_error_errno(r, "--filesystem=%s: %m", failed);
                for (size_t i = 0; arg_filesystems[i]; i++)
                        log_debug("--filesystem=%s: filesystem %016" PRIx64 " pinned", arg_filesystems[i],
                                  m->only_filesystems->fsid[i]);
                strv_free(TAKE_PTR(arg_filesystems));
        }
        m->run_dir = strdup(arg_run_dir);
        if (!m->run_dir)
                return log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory");
        if (arg_tracefs) {
                m->tracefs = strdup(arg_tracefs);
                if (!m->tracefs)
                        return log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory");
        }
        if (arg_early_pass) {
                (void) sd_notify(false, "STATUS=Early-boot pass");
                _cleanup_free_ char *stage = NULL;
                InitramfsStatus st = {};
                uint64_t keep = 0;

                /* the initramfs stage's early pass could work on the root this boot: what runs from the
                 * first instant waits for the next boot's (not when it was off or skipped: it may be so
                 * for good, and the next live run queues those files again) */
                if (asprintf(&stage, "%s/initramfs.status", arg_run_dir) < 0)
                        return log_error_errno(SYNTHETIC_ERRNO(ENOMEM), "Out of memory");
                if (initramfs_status_read(stage, &st) >= 0 &&
                    (streq(st.early_outcome, "moved") || streq(st.early_outcome, "stopped") ||
                     streq(st.early_outcome, "nothing-queued")))
                        keep = st.root_fsid;
                return early_pass_run(&(EarlyPassOptions) {
                        .budget_usec = m->config.early_budget_usec,
                        .db_path = m->db_path,
                        .state_dir = m->state_dir,
                        .only_filesystems = m->only_filesystems,
                        .keep_running_fsid = keep,
                });
        }
        if (arg_boot_id)
                memcpy(m->boot_id, arg_boot_id, 33);

        r = manager_start(m);
        if (r < 0)
                return r;

        r = sd_event_add_signal(m->event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Failed to handle SIGTERM/SIGINT/SIGHUP: %m");

        (void) sd_notify(false, "READY=1");
        manager_notify_status(m);
        log_info("seeklessd %s running, database %s", PACKAGE_VERSION, m->db_path);

        r = sd_event_loop(m->event);
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Saving open sessions...");
        if (r < 0)
                log_error_errno(r, "Event loop failed: %m");
        manager_flush(m);
        log_info("seeklessd stopped");
        return r;
}

int main(int argc, char *argv[]) {
        int r = run(argc, argv);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
