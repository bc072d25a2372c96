#pragma once
// POST /slots/{id}?action=save|restore|erase as llama-server answers it: save writes an idle
// slot's cells and tokens to a file in --slot-save-path, restore reads one back, erase empties
// the slot. Filenames are plain names inside that folder: no separators, no "..", no hidden files.
#include <nlohmann/json.hpp>
#include <string>

#include "tools/loom/serve/slot_scheduler.h"

namespace loom::serve {

// The action a request asks for; RequestError (400) for an unknown action, a missing or unsafe
// filename, a body that is not JSON.
SlotAction parse_slot_action(int slot, const std::string &action, const std::string &body,
                             const std::string &save_dir);

// Whether `name` is a plain file name: 1..255 bytes, no '/', '\\', NUL or control characters,
// not "." or "..", not starting with '.'.
bool is_safe_filename(const std::string &name);

// The 200 answer: {"id_slot", "filename", "n_saved" | "n_restored" | "n_erased", "n_written" |
// "n_read", "timings": {"save_ms" | "restore_ms"}}.
nlohmann::json slot_action_json(const SlotAction &action, const SlotActionResult &result);

}  // namespace loom::serve
