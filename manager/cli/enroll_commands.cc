// picketctl enroll token create|list|revoke: bootstrap tokens for sensor enrollment.
#include <memory>

#include "common/pki/pki.h"
#include "common/strings.h"
#include "manager/cli/command.h"

namespace picket::manager::cli {
namespace {

std::vector<std::string_view> split_commas(std::string_view text) {
    std::vector<std::string_view> out;
    size_t start = 0;
    for (;;) {
        const size_t comma = text.find(',', start);
        out.push_back(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
        if (comma == std::string_view::npos) {
            return out;
        }
        start = comma + 1;
    }
}

// The options of the enroll commands; the leaf callbacks keep them alive while CLI11 parses.
struct EnrollOptions {
    uint32_t token_uses = 1;
    std::string token_ttl = "24h";
    std::string token_labels;
    std::string token_pattern;
    std::string revoke_token_id;
};

}  // namespace

void add_enroll_commands(CLI::App& app, Globals& g, std::ostream& out, std::ostream& err,
                         const Leaf& leaf) {
    auto o = std::make_shared<EnrollOptions>();
    auto* enroll = app.add_subcommand("enroll", "Bootstrap enrollment of sensors");
    enroll->require_subcommand(1);
    auto* enroll_token = enroll->add_subcommand("token", "Bootstrap tokens: create, list, revoke");
    enroll_token->require_subcommand(1);
    auto* token_create = enroll_token->add_subcommand(
        "create", "Create a bootstrap token (printed once: ID.SECRET)");
    token_create->add_option("--uses", o->token_uses, "Enrollments it allows (default 1)")
        ->check(CLI::Range(1, 10000));
    token_create->add_option("--ttl", o->token_ttl, "Lifetime: 90s, 30m, 6h, 7d (default 24h)");
    token_create->add_option("--labels", o->token_labels,
                             "Labels imposed on the sensors it enrolls: k=v,k=v");
    token_create->add_option("--name-pattern", o->token_pattern,
                             "Sensor names it may enroll (full-match regex; default any)");
    leaf(token_create, [&g, &out, &err, o] {
        Command cmd("enroll token create", g, out, err);
        v1::CreateBootstrapTokenRequest req;
        req.set_uses(o->token_uses);
        std::optional<uint64_t> ttl = strings::parse_duration_seconds(o->token_ttl);
        if (!ttl || *ttl == 0 || *ttl > 365ULL * 86400) {
            return cmd.usage("--ttl '" + o->token_ttl +
                             "': expected a duration of 1s to 365d (90s, 30m, 6h, 7d)");
        }
        req.set_ttl_seconds(*ttl);
        if (!o->token_labels.empty()) {
            for (std::string_view item : split_commas(o->token_labels)) {
                const size_t eq = item.find('=');
                if (eq == std::string_view::npos) {
                    return cmd.usage("--labels: '" + std::string(item) + "': expected KEY=VALUE");
                }
                std::string k(item.substr(0, eq)), v(item.substr(eq + 1));
                if (absl::Status st = store::validate_label(k, v); !st.ok()) {
                    return cmd.usage("--labels: " + std::string(st.message()));
                }
                if (!req.mutable_labels()->insert({k, v}).second) {
                    return cmd.usage("--labels: '" + k + "' given twice");
                }
            }
        }
        req.set_name_pattern(o->token_pattern);
        return cmd.show(&Stub::CreateBootstrapToken, req, token_create_json, token_create_text);
    });
    auto* token_list = enroll_token->add_subcommand("list", "List bootstrap tokens (no secrets)");
    leaf(token_list, [&g, &out, &err, o] {
        Command cmd("enroll token list", g, out, err);
        return cmd.show(&Stub::ListBootstrapTokens, v1::ListBootstrapTokensRequest{}, tokens_json,
                        tokens_text);
    });
    auto* token_revoke =
        enroll_token->add_subcommand("revoke", "Revoke a bootstrap token (it enrolls no more)");
    token_revoke->add_option("ID", o->revoke_token_id, "Token id (the part before the dot)")
        ->required();
    leaf(token_revoke, [&g, &out, &err, o] {
        Command cmd("enroll token revoke", g, out, err);
        if (absl::Status st = pki::validate_bootstrap_token_id(o->revoke_token_id); !st.ok()) {
            return cmd.usage(st);
        }
        v1::RevokeBootstrapTokenRequest req;
        req.set_id(o->revoke_token_id);
        return cmd.show(&Stub::RevokeBootstrapToken, req, token_revoke_json, token_revoke_text);
    });
}

}  // namespace picket::manager::cli
