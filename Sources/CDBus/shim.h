// libdbus-1 (Debian libdbus-1-dev), for MPRIS.
#include <dbus/dbus.h>
