/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What durable checkpoints cost a run (bench/checkpoint.sh, bench/README.md "Durable checkpoints"): runs
 * of NFILES small files moved by the mover on a mounted ext4, the run store's database on the same
 * filesystem (as /var/lib/seekless on /), each file checkpointed in one of these ways, the ways side by
 * side round after round (their order turned each round), every round on files written anew:
 *   lazy       db_run_file_set(): a commit under the connection's synchronous = NORMAL, each file's move
 *              left to the journal's periodic commit (MoverOptions.lazy_commit; before durable checkpoints)
 *   commit     lazy's checkpoint, each file's move committed (fsync) after it: what the commit costs alone
 *   nocommit   run_checkpoint(): synchronous = FULL for the commit, the WAL synced; the move left to the
 *              journal (the early pass before moves were committed)
 *   durable    run_checkpoint(), each file's move committed (fsync) after it: what the early pass does,
 *              in the mover's thread
 *   walsync    db_run_file_set(), then fdatasync() of the WAL file by hand (the alternative to the pragma),
 *              the move left to the journal
 *   optimizer  the daemon's way: the mover in the optimizer's thread, each move committed, each checkpoint
 *              (run_checkpoint()) written by the main loop, the worker waiting for it before the next file
 * Prints one line per run, then per way: the median over the rounds, its ratio to the first way's and the
 * time it adds per file, and the median of the ratios to the first way round by round (the two runs of a
 * round close in time: what a load that comes and goes changes least).
 * With --json, one JSON object a run instead ({"round", "way", "secs", "ms_per_file", "counted"}) and no
 * medians: bench/checkpoint.sh writes them to its results, and bench/summary.sh makes the medians.
 *   usage: checkpoint-cost [--json] MOUNT SYSFS_DIR STATE_FILE NFILES ROUNDS WAY...
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/db.h"
#include "fs/fid-util.h"
#include "common/macro.h"
#include "relocate/mover.h"
#include "relocate/optimizer.h"
#include "relocate/run.h"

#define BOOT_ID "0123456789abcdef0123456789abcdef"
#define MAX_WAYS 6
#define MAX_ROUNDS 64

typedef enum Way {
        WAY_LAZY,
        WAY_COMMIT,
        WAY_NOCOMMIT,
        WAY_DURABLE,
        WAY_WALSYNC,
        WAY_OPTIMIZER,
        _WAY_MAX,
} Way;

static bool json;

static const char *const way_names[_WAY_MAX] = { "lazy", "commit", "nocommit", "durable", "walsync", "optimizer" };

typedef struct Ctx {
        Way way;
        Db *db;
        int64_t run;
        int wal_fd;
        unsigned failed;
} Ctx;

static double now_sec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void die(const char *what, int r) {
        fprintf(stderr, "checkpoint-cost: %s: %s\n", what, strerror(r < 0 ? -r : r));
        exit(EXIT_FAILURE);
}

static void on_file(void *userdata, size_t index, const MoveOutcome *o) {
        Ctx *c = userdata;
        int r;

        if (c->way == WAY_DURABLE || c->way == WAY_NOCOMMIT)
                r = run_checkpoint(c->db, c->run, index, o);
        else {
                r = db_run_file_set(c->db, c->run, index, run_file_state_of(o->result), o->why, o->reason, o->bytes);
                if (r >= 0 && c->way == WAY_WALSYNC && fdatasync(c->wal_fd) < 0)
                        r = -errno;
        }
        if (r < 0 || o->result != MOVE_DONE)
                c->failed++;
}

static void on_finished(Optimizer *o, void *userdata) {
        (void) sd_event_exit(o->opts.event, 0);
}

/* NFILES files of 4-64 KiB (seeded sizes, random data) in dir, written one after the other and synced */
static void make_files(const char *dir, size_t n, unsigned seed, char **paths, uint64_t *sizes) {
        static uint8_t buf[64 * 1024];
        uint64_t x = 0x9e3779b97f4a7c15ULL ^ seed;

        if (mkdir(dir, 0755) < 0)
                die(dir, errno);
        for (size_t i = 0; i < n; i++) {
                int fd;

                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                sizes[i] = (4 + (x >> 33) % 61) * 1024;
                for (size_t j = 0; j < sizes[i]; j += 8) {
                        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                        memcpy(buf + j, &x, 8);
                }
                if (asprintf(&paths[i], "%s/f%05zu", dir, i) < 0)
                        die("asprintf", ENOMEM);
                fd = open(paths[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0 || write(fd, buf, sizes[i]) != (ssize_t) sizes[i])
                        die(paths[i], errno);
                close(fd);
        }
}

static void make_item(const char *path, MoveItem *ret) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        int r;

        if (fd < 0 || fstat(fd, &st) < 0)
                die(path, errno);
        *ret = (MoveItem) {
                .path = path,
                .size = (uint64_t) st.st_size,
                .mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
        };
        r = file_key_from_fd(fd, &ret->key);
        if (r < 0)
                die(path, r);
}

/* One run of the files in dir, checkpointed the given way. Returns its seconds (the mover's run). */
static double one_run(const char *mount, const char *sysfs_dir, const char *state_file, size_t n, unsigned round,
                      Way way) {
        char dir[4096], db_path[4096 + 16], wal[4096 + 32];
        _cleanup_free_ char **paths = calloc(n, sizeof *paths);
        _cleanup_free_ uint64_t *sizes = calloc(n, sizeof *sizes);
        _cleanup_free_ MoveItem *items = calloc(n, sizeof *items);
        _cleanup_free_ MoveOutcome *out = calloc(n, sizeof *out);
        _cleanup_free_ DbSessionFile *sf = calloc(n, sizeof *sf);
        _cleanup_close_ int mfd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DbMergeInput in = {};
        MoverStats st;
        Ctx c = { .way = way, .wal_fd = -EBADF };
        double t0, t;
        int r;

        if (!paths || !sizes || !items || !out || !sf)
                die("calloc", ENOMEM);
        if (mfd < 0)
                die(mount, errno);
        snprintf(dir, sizeof dir, "%s/r%u-%s", mount, round, way_names[way]);
        snprintf(db_path, sizeof db_path, "%s.db", dir);
        make_files(dir, n, round, paths, sizes);
        for (size_t i = 0; i < n; i++) {
                make_item(paths[i], &items[i]);
                sf[i] = (DbSessionFile) { .key = items[i].key, .path = paths[i], .size = items[i].size,
                                          .mtime_ns = items[i].mtime_ns };
        }
        r = db_open(db_path, &c.db);
        if (r < 0)
                die(db_path, r);
        r = db_add_session(c.db, &(DbSession) { .profile = "boot", .kind = PROFILE_BOOT, .boot_id = BOOT_ID,
                                                .files = sf, .n_files = n }, 3, NULL);
        if (r >= 0)
                r = db_load_merge_input(c.db, "boot", 3, &in);
        if (r < 0 || in.n_sessions != 1 || in.n_session_files[0] != n)
                die("the session", r < 0 ? r : EBADMSG);
        for (size_t i = 0; i < n; i++)
                items[i].file_id = in.session_files[0][i];
        db_merge_input_free(&in);
        r = run_create(c.db, items[0].key.fsid, mount, items, n, &c.run);
        if (r < 0)
                die("run_create", r);
        snprintf(wal, sizeof wal, "%s-wal", db_path);
        c.wal_fd = open(wal, O_RDONLY | O_CLOEXEC);
        if (c.wal_fd < 0)
                die(wal, errno);
        if (syncfs(mfd) < 0)
                die("syncfs", errno);

        if (way == WAY_OPTIMIZER) {
                _cleanup_(sd_event_unrefp) sd_event *e = NULL;
                Optimizer *o = NULL;
                OptJob *job = calloc(1, sizeof *job);

                if (!job || !(job->items = calloc(n, sizeof *job->items)) ||
                    !(job->positions = calloc(n, sizeof *job->positions)) ||
                    !(job->paths = calloc(n, sizeof *job->paths)) || !(job->mount = strdup(mount)) ||
                    !(job->sysfs_dir = strdup(sysfs_dir)))
                        die("calloc", ENOMEM);
                for (size_t i = 0; i < n; i++) {
                        job->items[i] = items[i];
                        job->paths[i] = TAKE_PTR(paths[i]);
                        job->items[i].path = job->paths[i];
                        job->positions[i] = i;
                }
                job->n_items = n;
                job->run_id = c.run;
                r = sd_event_new(&e);
                if (r < 0)
                        die("sd_event_new", r);
                t0 = now_sec();
                r = optimizer_start(&(OptimizerOptions) { .event = e, .db = c.db, .state_file = state_file,
                                                          .finished = on_finished }, job, 1, &o);
                if (r < 0)
                        die("optimizer_start", r);
                r = sd_event_loop(e);
                t = now_sec() - t0;
                if (r < 0)
                        die("sd_event_loop", r);
                if (o->moved_files != n || o->failed)
                        c.failed = 1;
                o = optimizer_free(o);
        } else {
                MoverOptions mo = {
                        .mount_fd = mfd,
                        .sysfs_dir = sysfs_dir,
                        .state_file = state_file,
                        .lazy_commit = way != WAY_DURABLE && way != WAY_COMMIT,
                        .progress = on_file,
                        .userdata = &c,
                };

                t0 = now_sec();
                r = mover_run(&mo, items, n, out, &st);
                t = now_sec() - t0;
                if (r < 0)
                        die("mover_run", r);
                if (st.files_moved != n)
                        c.failed = 1;
                (void) run_finish(c.db, c.run, 0, &st);
        }
        if (json)
                printf("{\"round\":%u,\"way\":\"%s\",\"secs\":%.3f,\"ms_per_file\":%.2f,\"counted\":%s}\n", round,
                       way_names[way], t, t * 1000 / (double) n, c.failed ? "false" : "true");
        else
                printf("round %u %-9s %7.3f s  %5.2f ms a file%s\n", round, way_names[way], t, t * 1000 / (double) n,
                       c.failed ? "  (not every file moved and checkpointed: not counted)" : "");
        fflush(stdout);
        c.wal_fd = safe_close(c.wal_fd);
        c.db = db_free(c.db);
        for (size_t i = 0; i < n; i++)
                free(paths[i]);
        {
                _cleanup_free_ char *cmd = NULL;

                if (asprintf(&cmd, "rm -rf '%s' '%s' '%s'-wal '%s'-shm", dir, db_path, db_path, db_path) < 0)
                        die("asprintf", ENOMEM);
                if (system(cmd) != 0)
                        die("rm", EIO);
        }
        (void) syncfs(mfd);
        return c.failed ? -1 : t;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) {
        qsort(v, n, sizeof *v, cmp_double);
        return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
        double times[MAX_WAYS][MAX_ROUNDS], round_t[MAX_WAYS][MAX_ROUNDS], ratios[MAX_ROUNDS], med[MAX_WAYS];
        size_t n_ok[MAX_WAYS] = {}, n_ways = 0, n;
        Way ways[MAX_WAYS];
        unsigned rounds;

        if (argc > 1 && streq(argv[1], "--json")) {
                json = true;
                argv++;
                argc--;
        }
        if (argc < 7) {
                fprintf(stderr, "usage: %s [--json] MOUNT SYSFS_DIR STATE_FILE NFILES ROUNDS WAY... (lazy commit nocommit durable walsync "
                        "optimizer)\n", argv[0]);
                return EXIT_FAILURE;
        }
        n = strtoul(argv[4], NULL, 10);
        rounds = (unsigned) strtoul(argv[5], NULL, 10);
        if (n == 0 || rounds == 0 || rounds > MAX_ROUNDS || argc - 6 > MAX_WAYS) {
                fprintf(stderr, "checkpoint-cost: bad NFILES, ROUNDS (1-%d) or more than %d ways\n", MAX_ROUNDS,
                        MAX_WAYS);
                return EXIT_FAILURE;
        }
        for (int a = 6; a < argc; a++) {
                Way w = _WAY_MAX;

                for (Way k = 0; k < _WAY_MAX; k++)
                        if (streq(argv[a], way_names[k]))
                                w = k;
                if (w == _WAY_MAX) {
                        fprintf(stderr, "checkpoint-cost: unknown way %s\n", argv[a]);
                        return EXIT_FAILURE;
                }
                ways[n_ways++] = w;
        }
        /* the ways in turn, their order reversed every other round */
        for (unsigned r = 0; r < rounds; r++)
                for (size_t k = 0; k < n_ways; k++) {
                        size_t i = r % 2 ? n_ways - 1 - k : k;
                        double t = one_run(argv[1], argv[2], argv[3], n, r, ways[i]);

                        round_t[i][r] = t;
                        if (t >= 0)
                                times[i][n_ok[i]++] = t;
                }
        if (json)
                return EXIT_SUCCESS;
        printf("\n%zu files a run, %u rounds; median over the rounds (runs counted), its ratio to %s's and the "
               "time added per file; the median of the ratios round by round:\n", n, rounds, way_names[ways[0]]);
        for (size_t i = 0; i < n_ways; i++)
                med[i] = median(times[i], n_ok[i]);
        for (size_t i = 0; i < n_ways; i++) {
                size_t k = 0;

                printf("  %-9s %7.3f s (%zu)", way_names[ways[i]], med[i], n_ok[i]);
                if (i > 0 && med[0] > 0) {
                        for (unsigned r = 0; r < rounds; r++)
                                if (round_t[i][r] >= 0 && round_t[0][r] > 0)
                                        ratios[k++] = round_t[i][r] / round_t[0][r];
                        printf("  %.2fx, %+.2f ms a file; round by round %.2fx (%zu)", med[i] / med[0],
                               (med[i] - med[0]) * 1000 / (double) n, median(ratios, k), k);
                }
                printf("\n");
        }
        return EXIT_SUCCESS;
}
