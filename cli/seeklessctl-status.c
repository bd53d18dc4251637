/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessctl status: the daemon's properties as a "Key: value" block or one JSON object. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "common/bus-names.h"
#include "cli/document.h"
#include "common/log.h"
#include "common/macro.h"
#include "cli/output.h"
#include "cli/seeklessctl.h"

/* A filesystem from Filesystems (reason NULL), RelocationOff or PrefetchOff (device, fstype NULL) or
 * UnwatchedFilesystems. */
typedef struct StatusFilesystem {
        const char *mount, *device, *fstype, *reason;
} StatusFilesystem;

typedef struct StatusFilesystems {
        StatusFilesystem *items;
        size_t n, allocated;
} StatusFilesystems;

/* Strings point into the reply message. */
typedef struct StatusInfo {
        const char *version, *status, *idle_status, *recorder;
        /* InitramfsStage; outcome NULL: a daemon older than it */
        const char *initramfs_outcome, *initramfs_summary, *early_outcome, *early_summary;
        int boot_recording, optimizing;
        uint32_t active_launches, profiles, sessions, files;
        uint64_t events_received, overflows, database_size, optimization_id;
        StatusFilesystems watched, relocation_off, prefetch_off, unwatched;
        bool have_prefetch_off;         /* a daemon older than PrefetchOff: nothing said of prefetch */
        /* QueuedOptimization: when (0 = nothing queued) and which mount points (none = every one) */
        uint64_t queued_usec;
        const char **queued_mounts;
        size_t n_queued_mounts, allocated_queued_mounts;
} StatusInfo;

static void status_info_done(StatusInfo *info) {
        free(info->watched.items);
        free(info->relocation_off.items);
        free(info->prefetch_off.items);
        free(info->unwatched.items);
        free(info->queued_mounts);
}

static int status_filesystems_add(StatusFilesystems *l, StatusFilesystem fs) {
        if (GREEDY_REALLOC(l->items, l->allocated, l->n + 1) < 0)
                return -ENOMEM;
        l->items[l->n++] = fs;
        return 0;
}

static int read_filesystem(sd_bus_message *m, void *userdata) {
        StatusFilesystem fs = {};
        int r;

        r = sd_bus_message_read(m, "(sss)", &fs.mount, &fs.device, &fs.fstype);
        return r < 0 ? r : status_filesystems_add(userdata, fs);
}

/* RelocationOff's and PrefetchOff's rows. */
static int read_off(sd_bus_message *m, void *userdata) {
        StatusFilesystem fs = {};
        int r;

        r = sd_bus_message_read(m, "(ss)", &fs.mount, &fs.reason);
        return r < 0 ? r : status_filesystems_add(userdata, fs);
}

static int read_unwatched(sd_bus_message *m, void *userdata) {
        StatusFilesystem fs = {};
        int r;

        r = sd_bus_message_read(m, "(ssss)", &fs.mount, &fs.device, &fs.fstype, &fs.reason);
        return r < 0 ? r : status_filesystems_add(userdata, fs);
}

static int read_queued_mount(sd_bus_message *m, void *userdata) {
        StatusInfo *info = userdata;
        const char *mount;
        int r;

        r = sd_bus_message_read(m, "s", &mount);
        if (r < 0)
                return r;
        if (GREEDY_REALLOC(info->queued_mounts, info->allocated_queued_mounts, info->n_queued_mounts + 1) < 0)
                return -ENOMEM;
        info->queued_mounts[info->n_queued_mounts++] = mount;
        return 0;
}

static int read_queued(sd_bus_message *m, StatusInfo *info) {
        int r;

        r = sd_bus_message_enter_container(m, 'v', "(tas)");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'r', "tas");
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "t", &info->queued_usec);
        if (r < 0)
                return r;
        r = bus_read_array(m, false, "s", read_queued_mount, info);
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_status(sd_bus_message *m, StatusInfo *info) {
        static const struct {
                const char *name;
                char type;
                size_t offset;
        } props[] = {
                { "Version",        's', offsetof(StatusInfo, version)         },
                { "Status",         's', offsetof(StatusInfo, status)          },
                { "BootRecording",  'b', offsetof(StatusInfo, boot_recording)  },
                { "ActiveLaunches", 'u', offsetof(StatusInfo, active_launches) },
                { "Profiles",       'u', offsetof(StatusInfo, profiles)        },
                { "Sessions",       'u', offsetof(StatusInfo, sessions)        },
                { "Files",          'u', offsetof(StatusInfo, files)           },
                { "EventsReceived", 't', offsetof(StatusInfo, events_received) },
                { "Overflows",      't', offsetof(StatusInfo, overflows)       },
                { "DatabaseSize",   't', offsetof(StatusInfo, database_size)   },
                { "Optimizing",     'b', offsetof(StatusInfo, optimizing)      },
                { "OptimizationId", 't', offsetof(StatusInfo, optimization_id) },
                { "IdleStatus",     's', offsetof(StatusInfo, idle_status)     },
                { "Recorder",       's', offsetof(StatusInfo, recorder)        },
        };
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;

        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *name;
                bool known = false;

                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        return r;

                for (size_t i = 0; i < ELEMENTSOF(props); i++) {
                        char sig[2] = { props[i].type, 0 };

                        if (!streq(name, props[i].name))
                                continue;
                        r = sd_bus_message_read(m, "v", sig, (uint8_t *) info + props[i].offset);
                        known = true;
                        break;
                }
                if (!known) {
                        if (streq(name, "Filesystems"))
                                r = bus_read_array(m, true, "(sss)", read_filesystem, &info->watched);
                        else if (streq(name, "RelocationOff"))
                                r = bus_read_array(m, true, "(ss)", read_off, &info->relocation_off);
                        else if (streq(name, "PrefetchOff")) {
                                r = bus_read_array(m, true, "(ss)", read_off, &info->prefetch_off);
                                info->have_prefetch_off = true;
                        }
                        else if (streq(name, "UnwatchedFilesystems"))
                                r = bus_read_array(m, true, "(ssss)", read_unwatched, &info->unwatched);
                        else if (streq(name, "QueuedOptimization"))
                                r = read_queued(m, info);
                        else if (streq(name, "InitramfsStage"))
                                r = sd_bus_message_read(m, "v", "(ssss)", &info->initramfs_outcome,
                                                        &info->initramfs_summary, &info->early_outcome,
                                                        &info->early_summary);
                        else
                                r = sd_bus_message_skip(m, "v"); /* newer daemon, newer property */
                }
                if (r < 0)
                        return r;

                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;

        return sd_bus_message_exit_container(m);
}

/* "every watched filesystem" or "/, /home"; NULL on allocation failure. */
static char *join_mounts(const char *const *mounts, size_t n) {
        size_t len = 1;
        char *s, *p;

        if (n == 0)
                return strdup("every watched filesystem");
        for (size_t i = 0; i < n; i++)
                len += strlen(mounts[i]) + 2;
        s = p = malloc(len);
        if (!s)
                return NULL;
        for (size_t i = 0; i < n; i++)
                p = stpcpy(stpcpy(p, i > 0 ? ", " : ""), mounts[i]);
        return s;
}

/* What seekless does on each filesystem, in plain words: "MOUNT (DEVICE, FSTYPE): records, relocates and
 * prefetches", "...: records and prefetches; does not relocate: REASON", "...: records and relocates; does
 * not prefetch: REASON", "...: records; does not relocate: REASON; does not prefetch: REASON" (watched: in
 * JSON "filesystems", each with "relocates", "relocation_off", "prefetches" and "prefetch_off"; the reasons
 * null where it does; "prefetches" null and nothing said of prefetch by a daemon without PrefetchOff) or
 * "...: neither: REASON" (in JSON "unwatched", each with "reason"). */
static const TableColumn watched_columns[] = {
        { "FILESYSTEM", "mount"          },
        { NULL,         "device"         },
        { NULL,         "fstype"         },
        { NULL,         "relocates"      },
        { NULL,         "relocation_off" },
        { NULL,         "prefetches"     },
        { NULL,         "prefetch_off"   },
        {}
};

static const TableColumn unwatched_columns[] = {
        { "FILESYSTEM", "mount"  },
        { NULL,         "device" },
        { NULL,         "fstype" },
        { NULL,         "reason" },
        {}
};

/* The relocation_off and prefetch_off JSON arrays: {mount, reason}. */
static const TableColumn off_columns[] = {
        { NULL, "mount"  },
        { NULL, "reason" },
        {}
};

static const char *off_reason(const StatusFilesystems *off, const char *mount) {
        for (size_t i = 0; i < off->n; i++)
                if (streq(off->items[i].mount, mount))
                        return off->items[i].reason;
        return NULL;
}

/* "MOUNT (DEVICE, FSTYPE): VERDICT"; mount, device and fstype in JSON. */
static int filesystem_row(Table *t, const StatusFilesystem *fs, const char *verdict) {
        if (table_add_string(t, fs->mount) < 0 ||
            table_set_textf(t, "%s (%s, %s): %s", fs->mount, fs->device, fs->fstype, verdict) < 0 ||
            table_add_string(t, fs->device) < 0 || table_add_string(t, fs->fstype) < 0)
                return -ENOMEM;
        return 0;
}

/* A watched filesystem's verdict: what it does ("records", "records and relocates", "records, relocates and
 * prefetches"), then what it does not and why. NULL on OOM. */
static char *watched_verdict(bool prefetch_known, const char *no_reloc, const char *no_prefetch) {
        char *s = NULL;
        int r;

        if (!prefetch_known)
                r = no_reloc ? asprintf(&s, "records; does not relocate: %s", no_reloc) :
                               asprintf(&s, "records and relocates");
        else if (!no_reloc && !no_prefetch)
                r = asprintf(&s, "records, relocates and prefetches");
        else if (!no_reloc)
                r = asprintf(&s, "records and relocates; does not prefetch: %s", no_prefetch);
        else if (!no_prefetch)
                r = asprintf(&s, "records and prefetches; does not relocate: %s", no_reloc);
        else
                r = asprintf(&s, "records; does not relocate: %s; does not prefetch: %s", no_reloc, no_prefetch);
        return r < 0 ? NULL : s;
}

/* NULL on OOM, as the two below. */
static Table *watched_table(const StatusInfo *info) {
        _cleanup_(table_freep) Table *t = table_new_columns(watched_columns);

        for (size_t i = 0; t && i < info->watched.n; i++) {
                const char *why = off_reason(&info->relocation_off, info->watched.items[i].mount),
                           *no_pf = off_reason(&info->prefetch_off, info->watched.items[i].mount);
                _cleanup_free_ char *verdict = watched_verdict(info->have_prefetch_off, why, no_pf);

                if (!verdict || filesystem_row(t, &info->watched.items[i], verdict) < 0 ||
                    table_add_bool(t, !why) < 0 || (why ? table_add_string(t, why) : table_add_null(t)) < 0 ||
                    (info->have_prefetch_off ? table_add_bool(t, !no_pf) : table_add_null(t)) < 0 ||
                    (no_pf ? table_add_string(t, no_pf) : table_add_null(t)) < 0)
                        return NULL;
        }
        return TAKE_PTR(t);
}

static Table *unwatched_table(const StatusInfo *info) {
        _cleanup_(table_freep) Table *t = table_new_columns(unwatched_columns);

        for (size_t i = 0; t && i < info->unwatched.n; i++) {
                const StatusFilesystem *fs = &info->unwatched.items[i];

                _cleanup_free_ char *verdict = NULL;

                if (asprintf(&verdict, "neither: %s", fs->reason) < 0)
                        return NULL;
                if (filesystem_row(t, fs, verdict) < 0 || table_add_string(t, fs->reason) < 0)
                        return NULL;
        }
        return TAKE_PTR(t);
}

static Table *off_table(const StatusFilesystems *off) {
        _cleanup_(table_freep) Table *t = table_new_columns(off_columns);

        for (size_t i = 0; t && i < off->n; i++)
                if (table_add_string(t, off->items[i].mount) < 0 || table_add_string(t, off->items[i].reason) < 0)
                        return NULL;
        return TAKE_PTR(t);
}

/* The status: a "Key: value" block, one JSON object (its fields in seeklessctl(1), JSON OUTPUT). What fails
 * while it is built, the document remembers: print_doc() says so. */
static DocNode *status_doc(const StatusInfo *info) {
        _cleanup_(doc_freep) DocNode *d = doc_new();
        _cleanup_(table_freep) Table *watched = watched_table(info), *unwatched = unwatched_table(info),
                                     *off = off_table(&info->relocation_off),
                                     *pf_off = off_table(&info->prefetch_off);
        DocNode *queued;

        doc_add_string(d, "Version", "version", info->version ?: "");
        if (!info->version)
                doc_set_textf(d, "n/a");
        doc_add_string(d, "Status", "status", info->status ?: "");
        if (!info->status)
                doc_set_textf(d, "n/a");
        doc_add_bool(d, "Recording", "boot_recording", info->boot_recording);
        doc_set_textf(d, "boot %s, launches %" PRIu32, info->boot_recording ? "yes" : "no",
                      info->active_launches);
        doc_add_uint(d, NULL, "active_launches", info->active_launches);
        /* a daemon older than the property: no line, null */
        if (info->recorder)
                doc_add_string(d, "Recorder", "recorder", info->recorder);
        else
                doc_add_null(d, NULL, "recorder");
        doc_add_uint(d, "Profiles", "profiles", info->profiles);
        doc_add_uint(d, "Sessions", "sessions", info->sessions);
        doc_add_uint(d, "Files", "files", info->files);
        doc_add_bytes(d, "Database", "database_bytes", info->database_size);
        /* the text lists the filesystems here, watched or not; JSON last */
        if (info->watched.n + info->unwatched.n == 0)
                doc_add_string(d, "Filesystems", NULL, "none");
        doc_add_table(d, "Filesystems", NULL, watched, DOC_TABLE_ROWS);
        doc_add_table(d, info->watched.n > 0 ? "" : "Filesystems", NULL, unwatched, DOC_TABLE_ROWS);
        doc_add_uint(d, "Events", "events_received", info->events_received);
        doc_set_textf(d, "%" PRIu64 " received, %" PRIu64 " overflows", info->events_received, info->overflows);
        doc_add_uint(d, NULL, "overflows", info->overflows);
        doc_add_bool(d, "Optimizing", "optimizing", info->optimizing);
        if (info->optimizing)
                doc_set_textf(d, "yes (optimization %" PRIu64 ")", info->optimization_id);
        doc_add_uint(d, NULL, "optimization_id", info->optimization_id);
        doc_add_string(d, info->idle_status ? "Idle policy" : NULL, "idle", info->idle_status ?: "");
        /* what the initramfs stage did this boot; no line and null from a daemon older than the property */
        if (!info->initramfs_outcome)
                doc_add_null(d, NULL, "initramfs_stage");
        else {
                DocNode *stage = doc_add_object(d, "Initramfs", "initramfs_stage");

                doc_set_textf(d, "%s", info->initramfs_summary);
                doc_add_string(stage, NULL, "outcome", info->initramfs_outcome);
                doc_add_string(stage, NULL, "summary", info->initramfs_summary);
                doc_add_string(stage, NULL, "early_outcome", info->early_outcome);
                doc_add_string(stage, NULL, "early_summary", info->early_summary);
                if (info->early_summary[0])
                        doc_add_string(d, "Early pass", NULL, info->early_summary);
        }

        if (info->queued_usec == 0)
                doc_add_null(d, NULL, "queued");
        else {
                _cleanup_free_ char *mounts = join_mounts(info->queued_mounts, info->n_queued_mounts);
                char when[FORMAT_TIMESTAMP_MAX];

                queued = doc_add_object(d, "Queued", "queued");
                doc_set_textf(d, "optimization of %s since %s, starts when idle",
                              mounts ?: "the given filesystems", format_timestamp(when, sizeof when, info->queued_usec));
                doc_add_uint(queued, NULL, "queued_usec", info->queued_usec);
                doc_add_strv(queued, NULL, "mounts", info->queued_mounts, info->n_queued_mounts);
        }

        doc_add_table(d, NULL, "relocation_off", off, DOC_TABLE_HIDDEN);
        if (info->have_prefetch_off)
                doc_add_table(d, NULL, "prefetch_off", pf_off, DOC_TABLE_HIDDEN);
        else
                doc_add_null(d, NULL, "prefetch_off");
        doc_add_table(d, NULL, "filesystems", watched, DOC_TABLE_HIDDEN);
        doc_add_table(d, NULL, "unwatched", unwatched, DOC_TABLE_HIDDEN);
        return TAKE_PTR(d);
}

int verb_status(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(doc_freep) DocNode *d = NULL;
        StatusInfo info = {};
        int r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;

        r = call_daemon(bus, "org.freedesktop.DBus.Properties", "GetAll", argv[0], "get daemon status", NULL,
                        &reply, "s", SEEKLESS_BUS_INTERFACE);
        if (r < 0)
                return r;

        r = read_status(reply, &info);
        if (r >= 0) {
                d = status_doc(&info);
                r = print_doc(d);
        } else
                r = log_parse_error(r);

        status_info_done(&info);
        return r;
}
