# SPDX-License-Identifier: GPL-2.0-or-later
# A private, system-like D-Bus bus for tests, the demo and benchmarks (sourced): the stock default-deny
# system policy plus the project's own dbus/org.seekless.Seekless1.conf, so the real policy is what is
# tested.
#   start_private_bus DIR SOURCE_ROOT   -> sets BUS_PID, exports DBUS_SYSTEM_BUS_ADDRESS
start_private_bus() {
        local dir=$1 src=$2
        mkdir -p "$dir/system.d"
        cp "$src/dbus/org.seekless.Seekless1.conf" "$dir/system.d/"
        cat > "$dir/bus.conf" <<EOC
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$dir/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <includedir>$dir/system.d</includedir>
</busconfig>
EOC
        # non-root test callers must reach the socket
        chmod 755 "$dir"
        # not --fork: that would put the bus in a session of its own, out of reach of the signal a test
        # runner sends to the test's process group when it kills a test
        dbus-daemon --config-file="$dir/bus.conf" --nofork </dev/null 2>>"$dir/bus.log" &
        BUS_PID=$!
        local i
        for ((i = 0; i < 200; i++)); do
                [ -S "$dir/system_bus_socket" ] && break
                kill -0 "$BUS_PID" 2>/dev/null || { echo "dbus-daemon exited at start" >&2; return 1; }
                sleep 0.05
        done
        [ -S "$dir/system_bus_socket" ] || { echo "dbus-daemon did not create its socket in 10 s" >&2; return 1; }
        export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$dir/system_bus_socket"
}
