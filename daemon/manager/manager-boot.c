/* SPDX-License-Identifier: GPL-2.0-or-later */
/* When did boot finish? Ask systemd. seeklessd connects to the bus early, often before PID 1 itself is on
 * it, so a single Subscribe can fail or come too early; hence both: the StartupFinished signal (only sent
 * to subscribed clients; Subscribe is retried) and, while the boot session is open, a cheap poll of
 * FinishTimestampMonotonic every BOOT_POLL_USEC (0 until the boot finished). Whichever sees it first wins
 * (boot_finished() acts once). Without systemd on the bus the boot window is simply
 * BootWindowSec= from daemon start. */
#include <inttypes.h>
#include <stdarg.h>

#include "common/log.h"
#include "common/macro.h"
#include "manager/manager.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_IFACE "org.freedesktop.systemd1.Manager"
#define BOOT_POLL_USEC (2 * USEC_PER_SEC)

/* Whichever of the signal and the poll sees the boot's end first. */
static void boot_finished(Manager *m, uint64_t finish_usec) {
        if (!m->recording.boot || m->boot_watch.finish_known)
                return;
        m->boot_watch.finish_known = true;
        m->boot_watch.poll_source = sd_event_source_disable_unref(m->boot_watch.poll_source);
        manager_boot_finished(m, finish_usec);
}

static int on_startup_finished(sd_bus_message *message, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;

        log_debug("systemd reports startup finished");
        boot_finished(m, now_usec(CLOCK_MONOTONIC));
        return 0;
}

static int on_finish_timestamp(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint64_t ts = 0;
        int r;

        if (e) {
                /* early in the boot PID 1 may not be on the bus yet: the poll asks again (said once) */
                if (m->boot_watch.poll_failures++ == 0)
                        log_debug("Reading systemd's FinishTimestampMonotonic failed, asking every 2 s: %s",
                                  e->message ?: e->name);
                return 0;
        }
        r = sd_bus_message_read(reply, "v", "t", &ts);
        if (r < 0) {
                log_warning_errno(r, "Failed to parse FinishTimestampMonotonic, ignoring: %m");
                return 0;
        }
        if (ts > 0) {
                log_debug("systemd's FinishTimestampMonotonic is %" PRIu64, ts);
                boot_finished(m, ts);
        }
        return 0;
}

static int call_systemd(Manager *m, const char *iface, const char *method, sd_bus_message_handler_t cb,
                        const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(m->bus, &call, SD_DEST, SD_PATH, iface, method);
        if (r < 0)
                return r;
        /* never activate systemd1 through the bus: if it is not there, it is not there */
        r = sd_bus_message_set_auto_start(call, false);
        if (r < 0)
                return r;
        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(call, types, ap);
                va_end(ap);
                if (r < 0)
                        return r;
        }
        return sd_bus_call_async(m->bus, NULL, call, cb, m, 0);
}

static int on_subscribed(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        /* a failure is retried by the poll; reading the timestamp logs that once */
        if (!e || sd_bus_error_has_name(e, "org.freedesktop.systemd1.AlreadySubscribed"))
                ((Manager *) userdata)->boot_watch.subscribed = true;
        return 0;
}

static int ask_systemd(Manager *m) {
        int r = 0;

        if (!m->bus || !m->recording.boot || m->boot_watch.finish_known)
                return 0;
        if (!m->boot_watch.subscribed)
                r = call_systemd(m, SD_IFACE, "Subscribe", on_subscribed, NULL);
        if (r >= 0)
                r = call_systemd(m, "org.freedesktop.DBus.Properties", "Get", on_finish_timestamp, "ss", SD_IFACE,
                                 "FinishTimestampMonotonic");
        return r;
}

static int on_boot_poll(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int r;

        if (!m->recording.boot || m->boot_watch.finish_known) {
                m->boot_watch.poll_source = sd_event_source_disable_unref(m->boot_watch.poll_source);
                return 0;
        }
        r = ask_systemd(m);
        if (r < 0)
                log_debug_errno(r, "Failed to ask systemd about boot progress, asking again: %m");
        r = sd_event_source_set_time_relative(s, BOOT_POLL_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return r;
}

int manager_watch_boot(Manager *m) {
        int r;

        if (!m->recording.boot || m->boot_watch.finish_known)
                return 0;
        /* match first, then Subscribe, then read the timestamp: no window in which the signal is missed */
        m->boot_watch.startup_finished_slot = sd_bus_slot_unref(m->boot_watch.startup_finished_slot);
        m->boot_watch.subscribed = false;
        r = sd_bus_match_signal_async(m->bus, &m->boot_watch.startup_finished_slot, SD_DEST, SD_PATH, SD_IFACE,
                                      "StartupFinished", on_startup_finished, NULL, m);
        if (r < 0)
                return r;
        r = ask_systemd(m);
        if (r < 0)
                return r;
        if (!m->boot_watch.poll_source) {
                r = sd_event_add_time_relative(m->event, &m->boot_watch.poll_source, CLOCK_MONOTONIC, BOOT_POLL_USEC, 0,
                                               on_boot_poll, m);
                if (r < 0)
                        return r;
        }
        return 0;
}

void manager_boot_watch_done(Manager *m) {
        m->boot_watch.startup_finished_slot = sd_bus_slot_unref(m->boot_watch.startup_finished_slot);
        m->boot_watch.poll_source = sd_event_source_disable_unref(m->boot_watch.poll_source);
}
