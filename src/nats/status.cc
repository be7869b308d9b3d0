#include "nats/status.h"

#include <string>

namespace natsfleet::nats {

Error status_error(natsStatus status, const char* context) {
  std::string text = std::string(context) + ": " + natsStatus_GetText(status);
  switch (status) {
    case NATS_TIMEOUT:
      return {make_error_code(Errc::timeout), text};
    case NATS_NO_RESPONDERS:
      return {make_error_code(Errc::no_responders), text};
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_NOT_YET_CONNECTED:
    case NATS_NO_SERVER:
      return {make_error_code(Errc::not_connected), text};
    default: {
      const char* detail = nats_GetLastError(nullptr);
      if (detail && *detail) text += std::string(" (") + detail + ")";
      return {std::error_code(static_cast<int>(status), nats_category()), text};
    }
  }
}

}  // namespace natsfleet::nats
