/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The system bus connection. seeklessd starts before dbus.service so that it sees the boot from early on:
 * nothing here may wait for the bus. Connecting, Hello and the name request are all asynchronous; while
 * the socket does not exist yet (or the bus went away) a timer tries again every second. Recording and
 * the idle policy never depend on the bus being there. */
#include <errno.h>
#include <string.h>

#include "common/bus-names.h"
#include "common/log.h"
#include "common/macro.h"
#include "manager/manager.h"

#define BUS_RETRY_USEC USEC_PER_SEC

static int on_bus_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        m->bus_retry.source = sd_event_source_disable_unref(m->bus_retry.source);
        if (m->bus && !sd_bus_is_open(m->bus)) {
                m->boot_watch.startup_finished_slot = sd_bus_slot_unref(m->boot_watch.startup_finished_slot);
                m->bus = sd_bus_flush_close_unref(m->bus);
        }
        if (!m->bus)
                (void) manager_connect_bus(m);
        return 0;
}

static void schedule_retry(Manager *m) {
        int r;

        if (m->bus_retry.source)
                return;
        r = sd_event_add_time_relative(m->event, &m->bus_retry.source, CLOCK_MONOTONIC, BUS_RETRY_USEC, 0,
                                       on_bus_retry, m);
        if (r < 0)
                log_error_errno(r, "Failed to schedule a bus reconnect, the bus stays unavailable: %m");
}

/* Sees every incoming message, including the Disconnected signal sd-bus synthesizes locally. */
static int on_bus_message(sd_bus_message *message, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;

        if (sd_bus_message_is_signal(message, "org.freedesktop.DBus.Local", "Disconnected")) {
                log_warning("Lost the system bus connection; recording goes on, reconnecting");
                m->bus_retry.waiting_logged = true;
                schedule_retry(m);
        }
        return 0;
}

static int on_name_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint32_t ret = 0;
        int r;

        if (e) {
                log_error("Failed to acquire bus name %s: %s", SEEKLESS_BUS_NAME, e->message ?: e->name);
                return sd_event_exit(m->event, -sd_bus_message_get_errno(reply) ?: -EACCES);
        }
        r = sd_bus_message_read(reply, "u", &ret);
        if (r < 0)
                return sd_event_exit(m->event, log_error_errno(r, "Failed to parse RequestName reply: %m"));
        if (ret != 1 && ret != 4) {  /* DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER, _ALREADY_OWNER */
                log_error("Another seeklessd already owns %s", SEEKLESS_BUS_NAME);
                return sd_event_exit(m->event, -EEXIST);
        }
        log_info("Connected to the system bus as %s", SEEKLESS_BUS_NAME);
        m->bus_retry.waiting_logged = false;
        return 0;
}

int manager_connect_bus(Manager *m) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = sd_bus_open_system(&bus);
        if (r == -ENOENT || r == -ECONNREFUSED || r == -ECONNRESET || r == -EAGAIN) {
                /* early in the boot: no dbus-daemon and no dbus.socket yet */
                if (!m->bus_retry.waiting_logged)
                        log_info("System bus not available yet (%s); recording anyway, connecting when it appears",
                                 strerror(-r));
                m->bus_retry.waiting_logged = true;
                schedule_retry(m);
                return 0;
        }
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the system bus: %m");

        r = sd_bus_add_filter(bus, NULL, on_bus_message, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the bus connection: %m");
        r = manager_bus_add_objects(m, bus);
        if (r < 0)
                return log_error_errno(r, "Failed to add the manager object: %m");
        r = sd_bus_request_name_async(bus, NULL, SEEKLESS_BUS_NAME, 0, on_name_reply, m);
        if (r < 0)
                return log_error_errno(r, "Failed to request bus name %s: %m", SEEKLESS_BUS_NAME);
        r = sd_bus_attach_event(bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach bus to event loop: %m");
        m->bus = TAKE_PTR(bus);

        r = manager_watch_boot(m);
        if (r < 0)
                log_warning_errno(r, "Failed to ask systemd about boot progress, using BootWindowSec=: %m");
        return 0;
}

void manager_bus_retry_done(Manager *m) {
        m->bus_retry.source = sd_event_source_disable_unref(m->bus_retry.source);
}
