/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessctl prefetch NAME: read a profile's data and metadata into the page cache now. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <systemd/sd-bus.h>

#include "common/bus-names.h"
#include "cli/document.h"
#include "common/log.h"
#include "common/macro.h"
#include "cli/output.h"
#include "cli/seeklessctl.h"
#include "cli/verbs.h"

/* One row per watched filesystem; JSON: {"profile": NAME, "filesystems": [ROW...]} */
static const TableColumn prefetch_columns[] = {
        { "MOUNT",    "mount"                              },
        { "STATE",    "state"                              },
        { "ASKED",    "asked_bytes",     TABLE_ALIGN_RIGHT },
        { "METADATA", "metadata_bytes",  TABLE_ALIGN_RIGHT },
        { "CACHED",   "cached_bytes",    TABLE_ALIGN_RIGHT },
        { "CALLS",    "calls",           TABLE_ALIGN_RIGHT },
        { "STALE",    "stale_files",     TABLE_ALIGN_RIGHT },
        {}
};

typedef struct PrefetchRows {
        Table *table;
        unsigned failed;
} PrefetchRows;

static int read_prefetch_row(sd_bus_message *m, void *userdata) {
        PrefetchRows *rows = userdata;
        Table *t = rows->table;
        const char *mount, *state;
        uint64_t asked, metadata, cached, calls;
        uint32_t stale;
        int r;

        r = sd_bus_message_read(m, "(ssttttu)", &mount, &state, &asked, &metadata, &cached, &calls, &stale);
        if (r < 0)
                return r;
        if (startswith(state, "failed"))
                rows->failed++;
        if (table_add_string(t, mount) < 0 || table_add_string(t, state) < 0 || table_add_bytes(t, asked) < 0 ||
            table_add_bytes(t, metadata) < 0 || table_add_bytes(t, cached) < 0 || table_add_uint(t, calls) < 0 ||
            table_add_uint(t, stale) < 0)
                return -ENOMEM;
        return 0;
}

int verb_prefetch(int argc, char *argv[], void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_(doc_freep) DocNode *d = NULL;
        _cleanup_free_ char *what = NULL, *name = NULL;
        PrefetchRows rows = {};
        int r;

        r = acquire_bus(&bus);
        if (r < 0)
                return r;
        name = arg_to_bus(argv[1]);
        if (!name || asprintf(&what, "prefetch profile '%s'", name) < 0) {
                what = NULL;
                return log_oom();
        }
        r = call_daemon(bus, SEEKLESS_BUS_INTERFACE, "Prefetch", argv[0], what, name, &reply, "s", name);
        if (r < 0)
                return r;

        t = table_new_columns(prefetch_columns);
        d = doc_new();
        if (!t || !d)
                return log_oom();
        rows.table = t;
        r = bus_read_array(reply, false, "(ssttttu)", read_prefetch_row, &rows);
        if (r < 0)
                return log_parse_error(r);
        (void) doc_add_string(d, NULL, "profile", name);
        (void) doc_add_table(d, NULL, "filesystems", t, DOC_TABLE_GRID);
        r = print_doc(d);
        if (r >= 0 && rows.failed > 0) {
                log_error("The prefetch failed on %u filesystem%s; see seeklessd's log.", rows.failed,
                          rows.failed == 1 ? "" : "s");
                r = -EIO;       /* exit status 1; stdout already says which */
        }
        return r;
}
