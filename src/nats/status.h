// natsStatus -> natsfleet::Error, keeping nats.c's last error text.
#pragma once

#include <nats/nats.h>

#include "natsfleet/error.h"

namespace natsfleet::nats {

Error status_error(natsStatus status, const char* context);

}  // namespace natsfleet::nats
