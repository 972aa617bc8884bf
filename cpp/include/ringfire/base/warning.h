// Warnings: conditions the library allows but the user must hear about every
// time they happen (parameters made or loaded with the security check
// disabled, for one). The default handler writes "ringfire warning: <text>"
// to stderr; the Python module routes warnings to Python's `warnings`
// (RuntimeWarning), so they can be filtered, logged or turned into errors.
#pragma once

#include <string>

namespace ringfire {

using WarningHandler = void (*)(const std::string& message);

// Installs `handler` (nullptr restores the default). A handler may throw to
// turn the warning into an error at the call site.
void set_warning_handler(WarningHandler handler);

// Reports `message` ("[op] text") through the installed handler.
void warn(const std::string& message);

}  // namespace ringfire
