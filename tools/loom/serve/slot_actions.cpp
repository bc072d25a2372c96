#include "tools/loom/serve/slot_actions.h"

#include <filesystem>

#include "tools/loom/serve/request.h"

namespace loom::serve {

bool is_safe_filename(const std::string &name) {
    constexpr size_t kMaxName = 255;  // a file name's limit on Linux file systems
    if (name.empty() || name.size() > kMaxName || name[0] == '.') return false;
    for (const char ch : name) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f || ch == '/' || ch == '\\') return false;
    }
    return true;
}

SlotAction parse_slot_action(int slot, const std::string &action, const std::string &body,
                             const std::string &save_dir) {
    SlotAction a{.slot = slot};
    if (action == "save") {
        a.kind = SlotAction::Kind::save;
    } else if (action == "restore") {
        a.kind = SlotAction::Kind::restore;
    } else if (action == "erase") {
        a.kind = SlotAction::Kind::erase;
        return a;
    } else {
        throw RequestError(400, "action",
                           "action must be save, restore or erase, got \"" + action + "\"");
    }
    const nlohmann::json json = nlohmann::json::parse(body, nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
        throw RequestError(400, "", "the body must be a JSON object with \"filename\"");
    }
    if (!json.contains("filename") || !json["filename"].is_string()) {
        throw RequestError(400, "filename", "\"filename\" (a string) is required");
    }
    const std::string name = json["filename"].get<std::string>();
    if (!is_safe_filename(name)) {
        throw RequestError(400, "filename",
                           "\"filename\" must be a plain file name in --slot-save-path (no "
                           "folders, no leading dot)");
    }
    a.path = (std::filesystem::path(save_dir) / name).string();
    return a;
}

nlohmann::json slot_action_json(const SlotAction &action, const SlotActionResult &result) {
    nlohmann::json out = {{"id_slot", action.slot}};
    switch (action.kind) {
        case SlotAction::Kind::save:
            out["filename"] = std::filesystem::path(action.path).filename().string();
            out["n_saved"] = result.n_tokens;
            out["n_written"] = result.n_bytes;
            out["timings"] = {{"save_ms", result.ms}};
            break;
        case SlotAction::Kind::restore:
            out["filename"] = std::filesystem::path(action.path).filename().string();
            out["n_restored"] = result.n_tokens;
            out["n_read"] = result.n_bytes;
            out["timings"] = {{"restore_ms", result.ms}};
            break;
        case SlotAction::Kind::erase:
            out["n_erased"] = result.n_tokens;
            break;
    }
    return out;
}

}  // namespace loom::serve
