// natsfleet: JetStream consumers that are safe on many replicas and through broker failures.
#pragma once

#include "natsfleet/error.h"
#include "natsfleet/fleet.h"
#include "natsfleet/health.h"
#include "natsfleet/message.h"
#include "natsfleet/spec.h"
