/* SPDX-License-Identifier: GPL-2.0-or-later */
/* When did boot finish? Ask systemd: subscribe (StartupFinished is only sent to subscribed clients), then
 * read FinishTimestampMonotonic, which is already set if boot finished before we asked. Without systemd
 * on the bus the boot window is simply BootWindowSec= from daemon start. */
#include "log.h"
#include "manager.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_IFACE "org.freedesktop.systemd1.Manager"

static int on_startup_finished(sd_bus_message *message, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;

        log_debug("systemd reports startup finished");
        manager_boot_finished(m, now_usec(CLOCK_MONOTONIC));
        return 0;
}

static int on_finish_timestamp(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint64_t ts = 0;
        int r;

        if (e) {
                log_warning("Failed to read systemd's FinishTimestampMonotonic, assuming boot still running: %s",
                            e->message);
                return 0;
        }
        r = sd_bus_message_read(reply, "v", "t", &ts);
        if (r < 0) {
                log_warning_errno(r, "Failed to parse FinishTimestampMonotonic, ignoring: %m");
                return 0;
        }
        if (ts > 0)
                manager_boot_finished(m, ts);
        return 0;
}

static int on_subscribed(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        int r;

        if (e && !sd_bus_error_has_name(e, "org.freedesktop.systemd1.AlreadySubscribed")) {
                log_info("systemd is not on the bus (%s): the boot session lasts BootWindowSec=", e->name);
                return 0;
        }
        r = sd_bus_call_method_async(m->bus, NULL, SD_DEST, SD_PATH, "org.freedesktop.DBus.Properties", "Get",
                                     on_finish_timestamp, m, "ss", SD_IFACE, "FinishTimestampMonotonic");
        if (r < 0)
                log_warning_errno(r, "Failed to query systemd's boot state, ignoring: %m");
        return 0;
}

int manager_watch_boot(Manager *m) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int r;

        /* match first, then Subscribe, then read the timestamp: no window in which the signal is missed */
        r = sd_bus_match_signal_async(m->bus, &m->startup_finished_slot, SD_DEST, SD_PATH, SD_IFACE,
                                      "StartupFinished", on_startup_finished, NULL, m);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(m->bus, &call, SD_DEST, SD_PATH, SD_IFACE, "Subscribe");
        if (r < 0)
                return r;
        /* never activate systemd1 through the bus: if it is not there, it is not there */
        r = sd_bus_message_set_auto_start(call, false);
        if (r < 0)
                return r;
        return sd_bus_call_async(m->bus, NULL, call, on_subscribed, m, 0);
}
