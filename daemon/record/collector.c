/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seekless-boot-collector: records the order in which the boot reads files from before PID 1 loads its
 * units (it runs as a systemd generator, and generators run before that) until seeklessd takes over, which
 * stops it and adds what it saw to the head of the boot session (see boot-collect.h). Without it the unit
 * files, read by PID 1 before any service can start, are never recorded and never laid out.
 *
 * It depends on libc only, marks the filesystems of / and /usr for FAN_ACCESS and FAN_CLOSE_NOWRITE (the
 * close of a read-only open: files only mapped, such as /etc/ld.so.cache, raise no FAN_ACCESS; FAN_REPORT_FID:
 * no file is opened), keeps each file once in first-read order, and writes nothing but its pid and keys files in the
 * run directory. It stops on SIGTERM, after --timeout= seconds, or at 65536 files. As a generator it never
 * fails the boot: whatever goes wrong, it exits 0 and seeklessd records the boot from its own start. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "record/boot-collect.h"
#include "config.h"
#include "record/fid-event.h"
#include "fs/fid-util.h"
#include "fs/mounts.h"
#include "common/macro.h"
#include "record/session.h"

#define MAX_WATCH 8
#define MAX_FILES 65536
#define DEFAULT_TIMEOUT_SEC 300

static const char *arg_run_dir = RUN_DIR;
static const char *arg_watch[MAX_WATCH];
static size_t arg_n_watch;
static unsigned arg_timeout_sec = DEFAULT_TIMEOUT_SEC;

static void help(void) {
        printf("%1$s [--run-dir=DIR] [--watch=PATH]... [--timeout=SEC]\n"
               "%1$s [NORMAL_DIR EARLY_DIR LATE_DIR]\n\n"
               "Record the order of the boot's first reads until seeklessd takes them over.\n"
               "Without options it runs as a systemd generator: only outside the initrd, only when\n"
               "seeklessd.service is enabled, and not with seekless.collect=0 on the kernel command line.\n\n"
               "  -h --help          Show this help\n"
               "     --run-dir=DIR  Write the pid and keys files to DIR (default " RUN_DIR ")\n"
               "     --watch=PATH   Record reads on the filesystem of PATH (default / and /usr)\n"
               "     --timeout=SEC  Stop by itself after SEC seconds (default %2$u)\n",
               program_invocation_short_name, DEFAULT_TIMEOUT_SEC);
}

static bool cmdline_disables(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/cmdline", "re");
        char buf[4096], *save = NULL;

        if (!f || !fgets(buf, sizeof buf, f))
                return false;
        for (char *w = strtok_r(buf, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save))
                if (streq(w, "seekless.collect=0") || streq(w, "seekless.collect=no") ||
                    streq(w, "seekless.collect=false"))
                        return true;
        return false;
}

/* Run as a generator: collect only for a daemon that will take the records. */
static bool generator_wanted(void) {
        char target[64];
        ssize_t l;

        if (access("/etc/initrd-release", F_OK) >= 0)
                return false;
        if (cmdline_disables())
                return false;
        l = readlink(SYSCONFDIR "/systemd/system/seeklessd.service", target, sizeof target - 1);
        if (l > 0 && (target[l] = 0, streq(target, "/dev/null")))
                return false;   /* masked */
        return access(SYSCONFDIR "/systemd/system/sysinit.target.wants/seeklessd.service", F_OK) >= 0;
}

static int parse_argv(int argc, char *argv[]) {
        enum { ARG_RUN_DIR = 0x100, ARG_WATCH, ARG_TIMEOUT };
        static const struct option options[] = {
                { "help",    no_argument,       NULL, 'h'         },
                { "run-dir", required_argument, NULL, ARG_RUN_DIR },
                { "watch",   required_argument, NULL, ARG_WATCH   },
                { "timeout", required_argument, NULL, ARG_TIMEOUT },
                {}
        };
        char *end;
        unsigned long v;
        int c;

        /* systemd runs generators with three directories (or none, by hand) */
        if ((argc == 1 || argc == 4) && (argc == 1 || argv[1][0] == '/')) {
                if (!generator_wanted())
                        return 0;
                arg_watch[arg_n_watch++] = "/";
                arg_watch[arg_n_watch++] = "/usr";
                return 1;
        }
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_RUN_DIR:
                        arg_run_dir = optarg;
                        break;
                case ARG_WATCH:
                        if (arg_n_watch == MAX_WATCH) {
                                fprintf(stderr, "At most %u --watch= paths\n", MAX_WATCH);
                                return -EINVAL;
                        }
                        arg_watch[arg_n_watch++] = optarg;
                        break;
                case ARG_TIMEOUT:
                        errno = 0;
                        v = strtoul(optarg, &end, 10);
                        if (errno != 0 || *end || end == optarg || v == 0 || v > 86400) {
                                fprintf(stderr, "--timeout= expects seconds between 1 and 86400: %s\n", optarg);
                                return -EINVAL;
                        }
                        arg_timeout_sec = (unsigned) v;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                fprintf(stderr, "%s: unexpected argument %s\n", program_invocation_short_name, argv[optind]);
                return -EINVAL;
        }
        if (arg_n_watch == 0) {
                arg_watch[arg_n_watch++] = "/";
                arg_watch[arg_n_watch++] = "/usr";
        }
        return 1;
}

/* One fd per watched filesystem, to name files from their handles. */
static struct {
        uint64_t fsid;
        int fd;
} mounts[MAX_WATCH];
static size_t n_mounts;

static int mark_filesystems(int fan_fd) {
        dev_t seen[MAX_WATCH];
        size_t n_seen = 0;
        int marked = 0;

        for (size_t i = 0; i < arg_n_watch; i++) {
                struct stat st;
                bool dup = false;

                if (stat(arg_watch[i], &st) < 0)
                        continue;
                for (size_t j = 0; j < n_seen; j++)
                        dup = dup || seen[j] == st.st_dev;
                if (dup)
                        continue;
                seen[n_seen++] = st.st_dev;
                if (fanotify_mark(fan_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_ACCESS | FAN_CLOSE_NOWRITE,
                                  AT_FDCWD, arg_watch[i]) < 0) {
                        fprintf(stderr, "%s: can't watch %s: %m\n", program_invocation_short_name, arg_watch[i]);
                        continue;
                }
                marked++;
                mounts[n_mounts].fd = open(arg_watch[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (mounts[n_mounts].fd >= 0 && fsid_of_fd(mounts[n_mounts].fd, &mounts[n_mounts].fsid) >= 0)
                        n_mounts++;
                else if (mounts[n_mounts].fd >= 0)
                        close(mounts[n_mounts].fd);
        }
        return marked > 0 ? 0 : -ENOENT;
}

/* seeklessd's own reads (its database, the early pass's moves) are not the boot's. A seeklessd process lists
 * its pid in the exclude file before it reads anything, which holds even when it is gone by the time its
 * reads are taken from the queue (the early pass is short-lived); its name covers what its dynamic loader
 * read before main() while it still runs. */
static int exclude_fd = -EBADF;

static bool is_seekless(pid_t pid) {
        _cleanup_fclose_ FILE *f = NULL;
        char path[64], comm[32];

        if (pid == getpid() || (exclude_fd >= 0 && boot_collect_pid_listed(exclude_fd, pid)))
                return true;
        snprintf(path, sizeof path, "/proc/%i/comm", (int) pid);
        f = fopen(path, "re");
        if (!f || !fgets(comm, sizeof comm, f))
                return false;
        return streq(comm, "seeklessd\n");
}

/* Name a file right after its first read, while the kernel still can: remounting / read-write drops the
 * unused dentries, and a handle opened after that can't be named. Returns 1 to keep the file (path or
 * not), 0 to leave it out (gone, not a regular file). */
static int name_file(const FileKey *key, char **ret_path) {
        for (size_t i = 0; i < n_mounts; i++)
                if (mounts[i].fsid == key->fsid) {
                        int r = file_key_resolve(mounts[i].fd, key, NULL, ret_path);
                        return r == -ESTALE || r == -EBADE ? 0 : 1;
                }
        *ret_path = NULL;
        return 1;
}

static void drain(int fan_fd, Session *s) {
        union {
                struct fanotify_event_metadata m;
                char buf[64 * 1024];
        } u;
        FanotifyEvent ev;
        ssize_t n;

        while (s->n_files < MAX_FILES && (n = read(fan_fd, &u, sizeof u)) > 0)
                for (size_t off = 0; fanotify_event_next(u.buf, (size_t) n, &off, &ev);) {
                        FileKey key;

                        if (ev.meta.vers != FANOTIFY_METADATA_VERSION)
                                return;
                        if (fanotify_event_file_key(&ev, &key) <= 0 || session_contains(s, &key) ||
                            is_seekless(ev.meta.pid))
                                continue;
                        char *path = NULL;

                        if (name_file(&key, &path) == 0)
                                continue;
                        if (session_add(s, &key, 0) <= 0) {
                                free(path);
                                return;
                        }
                        (void) session_set_path(s, s->n_files - 1, path);
                        free(path);
                        if (s->n_files >= MAX_FILES)
                                return;
                }
}

static int write_keys(const Session *s) {
        _cleanup_free_ char *tmp = NULL, *path = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        int fd;

        if (asprintf(&tmp, "%s/." BOOT_COLLECT_KEYS_FILE ".XXXXXX", arg_run_dir) < 0 ||
            asprintf(&path, "%s/" BOOT_COLLECT_KEYS_FILE, arg_run_dir) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f) {
                close(fd);
                (void) unlink(tmp);
                return -errno;
        }
        fputs(BOOT_COLLECT_MAGIC, f);
        for (size_t i = 0; i < s->n_files; i++) {
                const FileKey *k = &s->files[i].key;

                fprintf(f, "%016" PRIx64 " %d ", k->fsid, (int) k->handle_type);
                for (uint32_t j = 0; j < k->handle_len; j++)
                        fprintf(f, "%02x", k->handle[j]);
                if (s->files[i].path) {
                        _cleanup_free_ char *p = session_path(s, i), *e = p ? boot_collect_escape_path(p) : NULL;

                        if (!e)
                                return -ENOMEM;
                        fprintf(f, " %s", e);
                }
                fputc('\n', f);
        }
        fprintf(f, "end %zu\n", s->n_files);
        if (fflush(f) != 0 || ferror(f) || rename(tmp, path) < 0) {
                int r = -errno ?: -EIO;
                (void) unlink(tmp);
                return r;
        }
        return 0;
}

static int collect(int fan_fd) {
        _cleanup_(session_freep) Session *s = NULL;
        _cleanup_close_ int sig_fd = -EBADF;
        struct timespec ts;
        uint64_t deadline;
        sigset_t mask;
        int r;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sig_fd < 0)
                return -errno;
        r = session_new(PROFILE_BOOT, "boot", 0, 0, &s);
        if (r < 0)
                return r;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        deadline = (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000 + arg_timeout_sec * 1000ULL;
        for (;;) {
                struct pollfd p[2] = { { .fd = fan_fd, .events = POLLIN }, { .fd = sig_fd, .events = POLLIN } };
                uint64_t now;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                now = (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
                if (now >= deadline || s->n_files >= MAX_FILES)
                        break;
                if (poll(p, 2, (int) MIN(deadline - now, (uint64_t) 60000)) < 0 && errno != EINTR)
                        break;
                /* the reads queued before the signal are part of the boot: take them first */
                drain(fan_fd, s);
                if (p[1].revents & POLLIN)
                        break;
        }
        drain(fan_fd, s);
        return write_keys(s);
}

int main(int argc, char *argv[]) {
        _cleanup_free_ char *pid_path = NULL, *started_path = NULL, *exclude_path = NULL;
        _cleanup_close_ int fan_fd = -EBADF;
        bool generator = argc == 1 || (argc == 4 && argv[1][0] == '/');
        int pid_fd, pipe_fd[2], r;
        char c;
        pid_t pid;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 && !generator ? EXIT_FAILURE : EXIT_SUCCESS;
        if (mkdir(arg_run_dir, 0700) < 0 && errno != EEXIST) {
                fprintf(stderr, "%s: can't create %s: %m\n", program_invocation_short_name, arg_run_dir);
                return generator ? EXIT_SUCCESS : EXIT_FAILURE;
        }
        if (asprintf(&pid_path, "%s/" BOOT_COLLECT_PID_FILE, arg_run_dir) < 0 ||
            asprintf(&started_path, "%s/" BOOT_COLLECT_STARTED_FILE, arg_run_dir) < 0 ||
            asprintf(&exclude_path, "%s/" BOOT_COLLECT_EXCLUDE_FILE, arg_run_dir) < 0)
                return generator ? EXIT_SUCCESS : EXIT_FAILURE;
        /* once per boot: generators run again on every daemon-reload, and /run starts empty each boot */
        pid_fd = open(started_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (pid_fd < 0) {
                if (errno == EEXIST)
                        return EXIT_SUCCESS;
                fprintf(stderr, "%s: can't create %s: %m\n", program_invocation_short_name, started_path);
                return generator ? EXIT_SUCCESS : EXIT_FAILURE;
        }
        close(pid_fd);
        /* before the pid file: a seeklessd that sees the collector running finds the file to list itself in */
        exclude_fd = open(exclude_path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (exclude_fd < 0)
                fprintf(stderr, "%s: can't create %s, seeklessd's reads will be kept: %m\n",
                        program_invocation_short_name, exclude_path);
        pid_fd = open(pid_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (pid_fd < 0) {
                fprintf(stderr, "%s: can't create %s: %m\n", program_invocation_short_name, pid_path);
                return generator ? EXIT_SUCCESS : EXIT_FAILURE;
        }
        fan_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_FID,
                               O_RDONLY | O_LARGEFILE | O_CLOEXEC);
        if (fan_fd < 0 || mark_filesystems(fan_fd) < 0) {
                if (fan_fd < 0)
                        fprintf(stderr, "%s: fanotify_init failed: %m\n", program_invocation_short_name);
                close(pid_fd);
                (void) unlink(pid_path);
                (void) unlink(exclude_path);
                return generator ? EXIT_SUCCESS : EXIT_FAILURE;
        }
        /* The marks are in place before we return: reads from here on are queued. The parent returns as
         * soon as the child has written its pid. */
        if (pipe2(pipe_fd, O_CLOEXEC) < 0)
                goto fail;
        pid = fork();
        if (pid < 0)
                goto fail;
        if (pid > 0) {
                close(pipe_fd[1]);
                close(pid_fd);
                r = (int) read(pipe_fd[0], &c, 1);
                return r == 1 || generator ? EXIT_SUCCESS : EXIT_FAILURE;
        }
        close(pipe_fd[0]);
        (void) setsid();
        if (chdir("/") < 0)
                _exit(EXIT_FAILURE);
        r = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (r >= 0) {
                (void) dup2(r, STDIN_FILENO);
                (void) dup2(r, STDOUT_FILENO);
                (void) dup2(r, STDERR_FILENO);
                if (r > STDERR_FILENO)
                        close(r);
        }
        dprintf(pid_fd, "%i\n", (int) getpid());
        close(pid_fd);
        c = 1;
        if (write(pipe_fd[1], &c, 1) < 0) {
                /* the parent returns anyway once the pipe closes */
        }
        close(pipe_fd[1]);
        r = collect(fan_fd);
        (void) unlink(pid_path);
        (void) unlink(exclude_path);
        _exit(r < 0 ? EXIT_FAILURE : EXIT_SUCCESS);

fail:
        fprintf(stderr, "%s: %m\n", program_invocation_short_name);
        close(pid_fd);
        (void) unlink(pid_path);
        (void) unlink(exclude_path);
        return generator ? EXIT_SUCCESS : EXIT_FAILURE;
}
