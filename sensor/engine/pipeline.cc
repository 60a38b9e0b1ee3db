// The per-packet pipeline, run by each worker thread: user BPF, decode, defrag, flow lookup,
// the ACL, stream and app layer, detection, IPS actions and alert records; and the end of a
// flow (finish_flows, end_flow). No locks, no allocation, no I/O per packet.
#include <netinet/in.h>

#include <cstring>
#include <new>

#include "common/strings.h"
#include "sensor/detect/flowbits.h"
#include "sensor/detect/tag.h"
#include "sensor/engine/engine_internal.h"

namespace picket::sensor::engine {

namespace {

// The responder's target for the packet's rejects (none recorded: a plain reject's sender).
RejectTarget reject_target(detect::RejectTo to) {
    switch (to) {
        case detect::RejectTo::kReceiver:
            return RejectTarget::kReceiver;
        case detect::RejectTo::kBoth:
            return RejectTarget::kBoth;
        case detect::RejectTo::kNone:
        case detect::RejectTo::kSender:
            break;
    }
    return RejectTarget::kSender;
}

// Suricata's protocol-detection-done flags (flow::Flow::proto_detect): the first data of
// direction d handed to the app layer once the flow's protocol is known (or its detection
// gave up) finishes d's detection. On a packet of d (inline stream, UDP) that packet carries
// it; on one of the other direction (IDS: TCP data handed over on its acknowledgement) the
// next packet of d does. Returns whether the packet being processed (direction dir) does.
bool note_proto_detect(const applayer::AppLayer& app, flow::Flow& f, flow::Direction d,
                       flow::Direction dir) {
    if ((f.proto_detect & flow::proto_detect_done(d)) != 0) {
        return false;
    }
    const bool failed = app.failed(f);
    if (!failed && app.proto(f) == inspect::AppProto::kUnknown) {
        return false;  // still undecided
    }
    f.proto_detect |= flow::proto_detect_done(d) | (failed ? flow::kProtoDetectFailed : 0);
    if (d == dir) {
        return true;
    }
    f.proto_detect |= flow::proto_detect_pending(d);
    return false;
}

}  // namespace

FlowVerdict Engine::inspect_flow_packet(WorkerContext& w, const decode::Packet& p, flow::Flow* f,
                                        flow::Direction dir, uint32_t link_len, int64_t now_ns) {
    FlowVerdict out;
    // The ACL (acl-file, docs/acl.md), before stream, app layer and detection. Without one
    // this costs the two loads of the test.
    bool acl_skip_detect = false;
    if (w.active != nullptr && w.active->acl != nullptr) {
        // Classified with its batch (process_batch) unless it was rebuilt by defrag since.
        const filter::Verdict v = w.acl_pre_packet == &p
                                      ? w.acl_pre
                                      : w.active->acl->lookup(filter::FiveTuple::from_packet(p));
        if (!v.matched()) {
            ++w.acl_nomatch;
        } else if (v.action == filter::AclAction::kPass) {
            // Stream and app layer still see the packet (their state stays whole); detection
            // does not.
            ++w.acl_pass;
            acl_skip_detect = true;
        } else if (v.action == filter::AclAction::kBypass) {
            ++w.acl_bypass;
            // The flow pass mark: process_packet() sends no later packet of the flow here.
            if (f != nullptr && f->action == flow::FlowAction::kNone) {
                f->action = flow::FlowAction::kPass;
            }
            return out;
        } else {
            ++w.acl_drop;
            if (config_.ips()) {
                // Verdict drop (ips.drop_reason.rules); the receiver never gets it, so
                // neither do stream nor app layer.
                out.verdict = PacketVerdict::kDrop;
                return out;
            }
            // Passive: the packet did reach its receiver; like pass, only counted.
            acl_skip_detect = true;
        }
    }
    detect::StreamView sv;
    bool proto_detect_pkt = false;  // protocol detection finished for dir with this packet
    bool have_stream = false;
    bool pkt_in_stream = false;
    // Taken before this packet's data reaches the app layer, as Suricata flags the packet from
    // its flow: the packet whose data ends a TLS handshake is still inspected in full.
    const bool payload_off = f != nullptr && w.app && w.app->payload_inspection_off(*f);
    uint32_t ntx = 0;
    applayer::TxUpdate* txs = w.tx_buf.data();
    const uint32_t tx_cap = static_cast<uint32_t>(w.tx_buf.size());
    flow::Direction tx_dir[kMaxTxPerPacket];
    if (f != nullptr && w.stream && p.has(decode::kFlagTcp)) {
        if (w.raw_on_ack) {
            // Suricata's FLOW_PKT_ESTABLISHED for TCP: the session (not just the flow) had got
            // there before this packet; closing and closed sessions stay established.
            const stream::SessionState before = w.stream->state(*f);
            f->pkt_established = before == stream::SessionState::kEstablished ||
                                 before == stream::SessionState::kClosing ||
                                 before == stream::SessionState::kClosed;
        }
        stream::StreamUpdate u = w.stream->process(p, *f, dir, now_ns);
        f->pkt_midstream = (u.events & stream::kEventMidstream) != 0;
        if (w.records && u.events != 0 && config_.eve.anomaly.stream) {
            log_packet_anomalies(w, p, f, u.events);
        }
        if (config_.stream_async_oneside && f->state == flow::FlowState::kNew &&
            (u.state == stream::SessionState::kEstablished ||
             u.state == stream::SessionState::kClosing)) {
            // Only one side is seen (asymmetric routing): the flow table waits for a packet
            // to the client that will never come; the tracker's handshake is enough.
            f->state = flow::FlowState::kEstablished;
        }
        out.stream_memcap =
            u.has(stream::kEventSegmentMemcap) || u.has(stream::kEventSessionMemcap);
        pkt_in_stream = w.raw_on_ack && u.has(stream::kEventStreamAdd);
        for (;;) {
            // The other direction first: what this packet acknowledged was sent before its
            // own bytes (Suricata hands the app layer the opposing side first).
            for (flow::Direction d :
                 {dir == flow::Direction::kToServer ? flow::Direction::kToClient
                                                    : flow::Direction::kToServer,
                  dir}) {
                const stream::StreamChunk& c = u.data(d);
                if (c.new_len() != 0 && d == dir && !u.more) {
                    sv = view_of(c);
                    have_stream = true;
                } else if (c.new_len() != 0 && w.active && !acl_skip_detect) {
                    // A chunk the packet's own inspection below cannot see, inspected now:
                    // its view ends with the next call to the tracker. A run of the packet's
                    // direction before another skipped hole (more runs follow), or the other
                    // direction's data that this packet's ACK let past a hole (not with
                    // raw_on_ack, where raw data goes out on its own direction's packets),
                    // on a pseudo packet of that direction.
                    if (d == dir) {
                        out.verdict = inspect_stream_chunk(w, p, *f, d, c, link_len, out.verdict);
                    } else {
                        out.verdict = inspect_stream_chunk(w, pseudo_packet(w, *f, d), *f, d, c, 0,
                                                           out.verdict);
                    }
                }
                const uint32_t k = w.feed_app(*f, d, u.app_data(d), txs + ntx, tx_cap - ntx);
                if (w.app && u.app_data(d).new_len() != 0 &&
                    note_proto_detect(*w.app, *f, d, dir)) {
                    proto_detect_pkt = true;
                }
                if (w.active && !acl_skip_detect && !payload_off &&
                    u.app_data(d).new_len() + u.app_data(d).gap != 0) {
                    if (detect::PduCutter* pc = snort3_pdu_cutter(w, *f, d); pc != nullptr) {
                        out.verdict = inspect_snort3_pdus(w, d == dir ? &p : nullptr, *f, d, *pc,
                                                          u.app_data(d), false, out.verdict);
                    }
                }
                if (w.raw_on_ack && w.app) {
                    if (w.app->take_raw_trigger(*f, d)) {
                        w.stream->trigger_raw(*f, d);
                    } else if (w.app->failed(*f)) {
                        // No parser here ends this protocol's messages, so the raw chunks
                        // would not line up with them as with Suricata's parsers: its rules
                        // see each packet again (pending raw data goes out first).
                        w.stream->raw_per_packet(*f);
                    }
                }
                for (uint32_t i = 0; i < k; ++i) {
                    tx_dir[ntx + i] = d;
                }
                ntx += k;
            }
            if (!u.more) {
                break;
            }
            u = w.stream->next(*f);
        }
        if (w.defer_tx) {
            ntx = w.order_txs(*f, dir, txs, tx_dir, ntx, tx_cap);
        }
    } else if (f != nullptr && w.app && p.has(decode::kFlagUdp) && p.payload_len != 0) {
        ntx = w.app->on_data(*f, dir, p.payload, p.payload_len, false, txs, tx_cap);
        proto_detect_pkt = note_proto_detect(*w.app, *f, dir, dir);
        for (uint32_t i = 0; i < ntx; ++i) {
            tx_dir[i] = dir;
        }
    }
    if (!w.active || acl_skip_detect) {
        return out;
    }
    detect::InspectExtras extras;
    extras.app = f != nullptr && w.app ? w.app->proto(*f) : detect::AppProto::kUnknown;
    if (f != nullptr && (f->proto_detect & flow::proto_detect_pending(dir)) != 0) {
        f->proto_detect &= static_cast<uint8_t>(~flow::proto_detect_pending(dir));
        proto_detect_pkt = true;  // finished on a packet of the other direction
    }
    extras.proto_detect_pkt = proto_detect_pkt;
    extras.stream = have_stream && !payload_off ? &sv : nullptr;
    extras.pkt_in_stream = pkt_in_stream;
    extras.no_payload = payload_off;
    // Made on the first packet of a PDU direction, before its data is acknowledged and cut:
    // its only_stream Snort 3 rules then read the PDUs and not the raw chunks, and its wire
    // alerts are recorded for the PDU that follows.
    extras.snort3_pdu_dir = f != nullptr && w.stream && p.has(decode::kFlagTcp) &&
                            snort3_pdu_cutter(w, *f, dir) != nullptr;
    const auto cap = static_cast<uint32_t>(w.alert_buf.size());
    uint32_t n = w.active->detect->inspect(p, f, dir, w.alert_buf.data(), cap, &extras);
    // A drop or reject rule matched this packet (IDS mode too: its alert says so). A pass
    // after it in the action-order then ends the inspection without passing the flow: the
    // packet is dropped, and the next ones are inspected again.
    bool dropped = extras.silent_drop;
    if (extras.passed) {
        // A pass rule: no alert for this packet from the rules after it in the action-order,
        // and (Suricata's flow pass) none of the rest of its flow is inspected. Its
        // transactions are not inspected either. The alerts of rules ordered before pass
        // (action-order with drop, reject or alert first) stand, with their actions.
        if (n != 0) {
            dropped = dropped || any_drop(w, n);
            out.verdict = stronger(out.verdict, apply_actions(w, f, n));
            // Suricata finalises a packet's alerts as one queue: the pass found in it marks
            // the packet, so the alerts queued before it are logged with verdict "pass"
            // (unless a drop or reject of theirs stands: drop wins).
            emit_alerts(w, p, f, dir, n, link_len, stronger(out.verdict, PacketVerdict::kPass),
                        extras.stream);
        }
        apply_silent_drop(w, f, extras, out);
        out.verdict = stronger(out.verdict, PacketVerdict::kPass);
        if (extras.pass_flow && !dropped && f != nullptr && f->action == flow::FlowAction::kNone) {
            f->action = flow::FlowAction::kPass;
        }
        return out;
    }
    if (n != 0) {
        if (extras.snort3_pdu_dir) {
            // Snort 3's add_alert: the PDU rebuilt from this packet does not repeat these.
            detect::WireAlerts& wire = detect::PduSlot::get(*f)->wire[static_cast<int>(dir)];
            for (uint32_t i = 0; i < n; ++i) {
                const detect::Rule& r = *w.alert_buf[i].rule;
                if (r.syntax == detect::RuleSyntax::kSnort3 && !w.alert_buf[i].from_stream) {
                    wire.add(r.gid, r.sid);
                }
            }
        }
        dropped = dropped || any_drop(w, n);
        out.verdict = stronger(out.verdict, apply_actions(w, f, n));
        emit_alerts(w, p, f, dir, n, link_len, out.verdict, extras.stream);
    }
    for (uint32_t i = 0; i < ntx; ++i) {
        n = w.active->detect->inspect_tx(p, f, tx_dir[i], txs[i].view, w.app->alert_log(*f),
                                         w.alert_buf.data(), cap, &extras);
        if (n != 0) {
            dropped = dropped || any_drop(w, n);
            out.verdict = stronger(out.verdict, apply_actions(w, f, n));
            // A pass rule on this transaction: the alerts ordered before it carry its verdict.
            emit_alerts(w, p, f, tx_dir[i], n, link_len,
                        extras.passed ? stronger(out.verdict, PacketVerdict::kPass) : out.verdict,
                        extras.stream, true);
        }
    }
    dropped = dropped || extras.silent_drop;
    if (extras.pass_flow && !dropped && f != nullptr && f->action == flow::FlowAction::kNone) {
        f->action = flow::FlowAction::kPass;  // a pass rule on a transaction
    }
    apply_silent_drop(w, f, extras, out);
    return out;
}

bool Engine::any_drop(const WorkerContext& w, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
        if (w.alert_buf[i].drop_rule) {
            return true;
        }
    }
    return false;
}

void Engine::apply_silent_drop(WorkerContext& w, flow::Flow* f, const detect::InspectExtras& extras,
                               FlowVerdict& out) {
    if (!extras.silent_drop) {
        return;
    }
    if (!config_.ips()) {
        if (extras.silent_reject && w.responder) {  // "reject ... noalert;" in IDS mode
            w.ids_reject = true;
            w.reject_to = detect::RejectTo(static_cast<uint8_t>(w.reject_to) |
                                           static_cast<uint8_t>(extras.silent_reject_to));
        }
        return;
    }
    // "drop ... noalert;": the verdict stands without an alert (Suricata's IPS idiom). The rule
    // still names the drop in the drop record (Suricata logs its PacketAlerts.drop there).
    if (w.drop_meta == nullptr && extras.silent_drop_rule != detect::InspectExtras::kNoSilentRule) {
        w.drop_meta = &w.active->metas[extras.silent_drop_rule];
    }
    out.verdict =
        stronger(out.verdict, extras.silent_reject ? PacketVerdict::kReject : PacketVerdict::kDrop);
    w.reject_to = detect::RejectTo(static_cast<uint8_t>(w.reject_to) |
                                   static_cast<uint8_t>(extras.silent_reject_to));
    if (extras.silent_drop_flow && f != nullptr && f->action == flow::FlowAction::kNone) {
        f->action = flow::FlowAction::kDrop;
    }
}

PacketVerdict Engine::apply_actions(WorkerContext& w, flow::Flow* f, uint32_t n) {
    PacketVerdict verdict = PacketVerdict::kNone;
    if (!config_.ips()) {
        // IDS: drop and reject rules only alert ("allowed"), and a reject still answers, as
        // Suricata's does in IDS mode, where the capture has a responder (live capture).
        if (w.responder) {
            for (uint32_t i = 0; i < n; ++i) {
                const detect::AlertRecord& a = w.alert_buf[i];
                if (a.drop_rule && a.rule_action == detect::Action::kReject) {
                    w.ids_reject = true;
                    w.reject_to = detect::RejectTo(static_cast<uint8_t>(w.reject_to) |
                                                   static_cast<uint8_t>(a.reject_to));
                }
            }
        }
        return verdict;
    }
    bool flow_drop = false;
    for (uint32_t i = 0; i < n; ++i) {
        detect::AlertRecord& a = w.alert_buf[i];
        if (!a.drop_rule) {
            continue;
        }
        a.action = detect::AlertAction::kBlocked;
        if (w.drop_meta == nullptr) {
            w.drop_meta = &w.active->metas[a.rule_index];  // the drop record's "alert"
        }
        if (a.rule_action == detect::Action::kReject) {
            w.reject_to = detect::RejectTo(static_cast<uint8_t>(w.reject_to) |
                                           static_cast<uint8_t>(a.reject_to));
        }
        verdict =
            stronger(verdict, a.rule_action == detect::Action::kReject ? PacketVerdict::kReject
                                                                       : PacketVerdict::kDrop);
        flow_drop = flow_drop || a.flow_scope;
    }
    // As Suricata: a match on the stream or a transaction, or an app-layer or header-only rule,
    // drops the rest of the flow too, uninspected (the first of drop / pass wins); a match on
    // the packet's own payload drops that packet alone.
    if (flow_drop && f != nullptr && f->action == flow::FlowAction::kNone) {
        f->action = flow::FlowAction::kDrop;
    }
    return verdict;
}

PacketVerdict Engine::inspect_stream_chunk(WorkerContext& w, const decode::Packet& p, flow::Flow& f,
                                           flow::Direction d, const stream::StreamChunk& c,
                                           uint32_t link_len, PacketVerdict verdict) {
    if (w.app && w.app->payload_inspection_off(f)) {
        return verdict;  // tls encryption-handling: the raw stream is no longer inspected
    }
    const detect::StreamView sv = view_of(c);
    detect::InspectExtras extras;
    extras.app = w.app ? w.app->proto(f) : detect::AppProto::kUnknown;
    extras.stream = &sv;
    extras.stream_only = true;
    extras.snort3_pdu_dir =
        detect::PduSlot::get(f) != nullptr &&
        detect::PduSlot::get(f)->dir[static_cast<int>(d)].kind() != detect::PduKind::kNone;
    const auto cap = static_cast<uint32_t>(w.alert_buf.size());
    const uint32_t n = w.active->detect->inspect(p, &f, d, w.alert_buf.data(), cap, &extras);
    // Only what matched on the stream: a header-only rule must not fire on a pseudo packet,
    // nor a second time on the packet. With a pass, these are the alerts of the rules before
    // it in the action-order (none by default).
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; ++i) {
        if (w.alert_buf[i].from_stream) {
            w.alert_buf[kept++] = w.alert_buf[i];
        }
    }
    if (kept != 0) {
        verdict = stronger(verdict, apply_actions(w, &f, kept));
        emit_alerts(w, p, &f, d, kept, link_len,
                    extras.passed ? stronger(verdict, PacketVerdict::kPass) : verdict, &sv);
    }
    if (extras.pass_flow && f.action == flow::FlowAction::kNone) {
        f.action = flow::FlowAction::kPass;  // the first of drop and pass wins
    }
    return verdict;
}

detect::PduCutter* Engine::snort3_pdu_cutter(WorkerContext& w, flow::Flow& f, flow::Direction d) {
    detect::PduState* st = detect::PduSlot::get(f);
    if (st == nullptr) {
        const detect::AppProto app = w.app ? w.app->proto(f) : detect::AppProto::kUnknown;
        detect::PduKind kind = detect::PduKind::kNone;
        if (app == detect::AppProto::kFtp || f.server_port == 21) {
            // Snort 3's ftp_server: its splitter cuts both directions at line ends.
            kind = w.active->detect->engine().snort3_pdus(detect::AppProto::kFtp)
                       ? detect::PduKind::kFtpLines
                       : detect::PduKind::kNone;
        } else if (app == detect::AppProto::kTls) {
            // Snort 3's ssl: its splitter cuts both directions at record ends.
            kind = w.active->detect->engine().snort3_pdus(detect::AppProto::kTls)
                       ? detect::PduKind::kTlsRecords
                       : detect::PduKind::kNone;
        }
        if (kind == detect::PduKind::kNone) {
            return nullptr;
        }
        st = new (std::nothrow)
            detect::PduState{{detect::PduCutter(kind), detect::PduCutter(kind)}, {}};
        if (st == nullptr) {
            return nullptr;
        }
        detect::PduSlot::set(f, st);
    }
    detect::PduCutter& c = st->dir[static_cast<int>(d)];
    return c.kind() != detect::PduKind::kNone ? &c : nullptr;
}

PacketVerdict Engine::inspect_snort3_pdus(WorkerContext& w, const decode::Packet* p, flow::Flow& f,
                                          flow::Direction d, detect::PduCutter& cutter,
                                          const stream::StreamChunk& a, bool end,
                                          PacketVerdict verdict) {
    // A PDU is rebuilt from acknowledged data: established, as Snort 3's rebuilt packets.
    const bool was_established = f.pkt_established;
    const bool was_midstream = f.pkt_midstream;
    f.pkt_established = true;
    f.pkt_midstream = false;
    auto inspect = [&](const uint8_t* data, uint32_t len) {
        if (f.action == flow::FlowAction::kDrop || f.action == flow::FlowAction::kPass ||
            (w.app && w.app->payload_inspection_off(f))) {
            return;
        }
        const decode::Packet& pkt = p != nullptr ? *p : pseudo_packet(w, f, d);
        const detect::StreamView sv{data, len, 0};
        detect::InspectExtras extras;
        extras.app = w.app ? w.app->proto(f) : detect::AppProto::kUnknown;
        extras.stream = &sv;
        extras.stream_only = true;
        extras.snort3_pdu = true;
        const auto cap = static_cast<uint32_t>(w.alert_buf.size());
        const uint32_t n = w.active->detect->inspect(pkt, &f, d, w.alert_buf.data(), cap, &extras);
        if (extras.passed) {
            if (f.action == flow::FlowAction::kNone) {
                f.action = flow::FlowAction::kPass;
            }
            return;
        }
        // Not again what a wire packet of d already alerted on (Snort 3's check_alerted).
        detect::WireAlerts& wire = detect::PduSlot::get(f)->wire[static_cast<int>(d)];
        uint32_t kept = 0;
        for (uint32_t i = 0; i < n; ++i) {
            const detect::Rule& r = *w.alert_buf[i].rule;
            if (w.alert_buf[i].from_stream && !wire.has(r.gid, r.sid)) {
                w.alert_buf[kept++] = w.alert_buf[i];
            }
        }
        wire.clear();
        if (kept != 0) {
            verdict = stronger(verdict, apply_actions(w, &f, kept));
            emit_alerts(w, pkt, &f, d, kept, 0, verdict, &sv);
        }
    };
    if (a.gap != 0) {
        cutter.flush(inspect);
    }
    cutter.feed(a.new_data(), a.new_len(), inspect);
    if (a.eof || end) {
        cutter.flush(inspect);
    }
    f.pkt_established = was_established;
    f.pkt_midstream = was_midstream;
    return verdict;
}

const decode::Packet& Engine::pseudo_packet(WorkerContext& w, const flow::Flow& f,
                                            flow::Direction d) {
    decode::Packet& p = w.pseudo;
    p = decode::Packet{};
    const bool to_server = d == flow::Direction::kToServer;
    p.ts_ns = f.last_ts_ns;
    p.src = to_server ? f.client_addr : f.server_addr;
    p.dst = to_server ? f.server_addr : f.client_addr;
    p.sport = to_server ? f.client_port : f.server_port;
    p.dport = to_server ? f.server_port : f.client_port;
    p.proto = f.proto;
    p.ip_version = f.key.ip_version;
    p.flags = (p.ip_version == 6 ? decode::kFlagIpv6 : decode::kFlagIpv4) |
              (f.proto == IPPROTO_TCP ? decode::kFlagTcp : decode::kFlagUdp);
    p.linktype = f.linktype;
    p.vlan_id[0] = f.vlan_id[0];
    p.vlan_id[1] = f.vlan_id[1];
    p.vlan_count = f.vlan_count;
    return p;
}

void Engine::finish_flows(WorkerContext& w) {
    if (!w.stream && !w.app) {
        return;
    }
    if (w.flow_state) {
        w.adopt_generation();
    }
    w.end_hook_on = false;  // from here on, flows end here, not when the table frees them
    w.flows.for_each_active([&](flow::Flow& f) { end_flow(w, f, true); });
}

void Engine::end_flow(WorkerContext& w, flow::Flow& f, bool release_app) {
    applayer::TxUpdate* txs = w.tx_buf.data();
    const uint32_t tx_cap = static_cast<uint32_t>(w.tx_buf.size());
    const auto cap = static_cast<uint32_t>(w.alert_buf.size());
    // Detection on what one direction of f delivered at its end: the stream window (only
    // alerts that matched on the stream: the pseudo packet has no headers or payload of its
    // own, so a header-only rule must not fire on it) and the transactions that changed.
    // tx_data: the stream bytes the transactions' raw content options see (the app layer's
    // chunk when the raw stream had already been inspected).
    // unacked[d]: the end-of-flow flush gave d's unacknowledged data to the app layer. A
    // transaction inspected from then on in direction d may hold data its receiver never
    // acknowledged (InspectExtras::unacked_end) when d's data was, or its request's
    // (to_server) was: a transaction holds both directions' buffers.
    bool unacked[2] = {false, false};
    auto inspect_end = [&](flow::Flow& f, flow::Direction d, const stream::StreamChunk* c,
                           uint32_t ntx, const stream::StreamChunk* tx_data = nullptr) {
        if (!w.active || (c == nullptr && ntx == 0)) {
            return;
        }
        // Not w.pkt: a flow evicted by the flow table ends while a packet is being looked up.
        const decode::Packet& p = pseudo_packet(w, f, d);
        PacketVerdict verdict = PacketVerdict::kNone;  // the pseudo packet's own
        f.pkt_established = true;                      // as Suricata's pseudo packets are
        f.pkt_midstream = false;
        if (c != nullptr) {
            verdict = inspect_stream_chunk(w, p, f, d, *c, 0, verdict);
        }
        detect::InspectExtras extras;
        extras.app = w.app ? w.app->proto(f) : detect::AppProto::kUnknown;
        extras.unacked_end =
            unacked[static_cast<int>(d)] || unacked[static_cast<int>(flow::Direction::kToServer)];
        // The transactions' raw content options see this direction's stream chunk, else the
        // app layer's (when the raw stream had already been inspected).
        detect::StreamView tv;
        if (const stream::StreamChunk* raw = c != nullptr ? c : tx_data; raw != nullptr) {
            tv = view_of(*raw);
            extras.stream = &tv;
        }
        for (uint32_t i = 0; i < ntx; ++i) {
            uint32_t n = w.active->detect->inspect_tx(p, &f, d, txs[i].view, w.app->alert_log(f),
                                                      w.alert_buf.data(), cap, &extras);
            if (n != 0) {
                verdict = stronger(verdict, apply_actions(w, &f, n));
                emit_alerts(w, p, &f, d, n, 0, verdict, extras.stream, true);
            }
        }
    };
    {
        // A dropped or passed flow is not inspected any more; its app state still ends.
        const bool inspect =
            f.action != flow::FlowAction::kDrop && f.action != flow::FlowAction::kPass;
        if (inspect && w.stream && f.proto == IPPROTO_TCP) {
            // Held data (out of order behind a hole, or not yet acknowledged) is delivered,
            // holes as gaps; each direction is inspected at once (its views last until the
            // next call on the flow).
            stream::StreamUpdate u = w.stream->flush(f);
            for (;;) {
                for (flow::Direction d : {flow::Direction::kToServer, flow::Direction::kToClient}) {
                    const stream::StreamChunk& c = u.data(d);
                    const stream::StreamChunk& a = u.app_data(d);
                    unacked[static_cast<int>(d)] |= a.new_len() != 0;
                    const uint32_t ntx = w.feed_app(f, d, a, txs, tx_cap);
                    detect::PduState* pdus = detect::PduSlot::get(f);
                    if (w.active && !u.more && pdus != nullptr &&
                        pdus->dir[static_cast<int>(d)].kind() != detect::PduKind::kNone) {
                        // What was acknowledged and waits for a cut point goes out at the end;
                        // the data never acknowledged does not (as for service buffers: "Snort
                        // 3's semantics", docs/rules.md).
                        inspect_snort3_pdus(w, nullptr, f, d, pdus->dir[static_cast<int>(d)],
                                            stream::StreamChunk{}, true, PacketVerdict::kNone);
                    }
                    inspect_end(f, d, c.new_len() != 0 ? &c : nullptr, ntx,
                                a.new_len() != 0 ? &a : nullptr);
                }
                if (!u.more) {
                    break;
                }
                u = w.stream->next(f);
            }
        }
        if (w.app) {
            if (inspect && f.proto == IPPROTO_TCP && w.defer_tx) {
                // Transactions still waiting for a packet of their direction, and the others
                // once more on the end-of-flow pseudo packets (which are "established").
                w.app->defer_all(f);
                for (flow::Direction d : {flow::Direction::kToServer, flow::Direction::kToClient}) {
                    inspect_end(f, d, nullptr, w.app->take_deferred(f, d, txs, tx_cap));
                }
            }
            if (inspect && f.proto == IPPROTO_TCP) {
                // End of stream for both directions (a second on_eof after a FIN is a no-op):
                // a body that runs until the close completes.
                for (flow::Direction d : {flow::Direction::kToServer, flow::Direction::kToClient}) {
                    inspect_end(f, d, nullptr, w.app->on_eof(f, d, txs, tx_cap));
                }
            }
            emit_app_records(w, f, f.last_ts_ns, 0);
            if (release_app) {
                // Its records first, while the app state is there (the run ends here).
                log_flow_end(w, f, flow::FlowEndReason::kShutdown);
                // The parsers' finish(): TLS and DNS count a message the end cut short.
                w.app->release_flow(f);
            }
        }
    }
}

void Engine::set_packet_fields(output::AlertEvent& ev, const decode::Packet& p,
                               const flow::Flow* f) const {
    ev.ts_ns = p.ts_ns;
    ev.flow_id = f != nullptr ? f->flow_id : 0;
    ev.pcap_cnt = p.pcap_cnt;
    ev.src = p.src;
    ev.dst = p.dst;
    ev.linktype = p.linktype;
    ev.sport = p.sport;
    ev.dport = p.dport;
    ev.vlan_count = p.vlan_count;
    ev.vlan_id[0] = p.vlan_id[0];
    ev.vlan_id[1] = p.vlan_id[1];
    ev.in_iface = config_.iface.empty() ? output::kNoInterface : 0;
    ev.ip_version = p.ip_version;
    ev.proto = p.proto;
    ev.icmp_type = p.icmp_type;
    ev.icmp_code = p.icmp_code;
}

void Engine::emit_alerts(WorkerContext& w, const decode::Packet& p, flow::Flow* f,
                         flow::Direction dir, uint32_t n, uint32_t link_len, PacketVerdict verdict,
                         const detect::StreamView* stream, bool tx) {
    const uint8_t* packet = p.data;
    uint32_t packet_len = p.caplen;
    if (p.has(decode::kFlagReassembled)) {
        // Link header of the last fragment + the whole datagram. The buffer was sized at
        // start-up for the largest datagram, so this does not allocate.
        w.alert_packet.resize(link_len + p.l3_len);
        std::memcpy(w.alert_packet.data(), p.data, link_len);
        std::memcpy(w.alert_packet.data() + link_len, p.l3, p.l3_len);
        packet = w.alert_packet.data();
        packet_len = static_cast<uint32_t>(w.alert_packet.size());
    }
    if (f != nullptr && n != 0) {
        f->alerted = true;
    }
    for (uint32_t i = 0; i < n; ++i) {
        const detect::AlertRecord& a = w.alert_buf[i];
        output::AlertEvent ev;
        set_packet_fields(ev, p, f);
        ev.meta = &w.active->metas[a.rule_index];
        if (f != nullptr) {
            ev.has_flow = true;
            for (int d = 0; d < 2; ++d) {
                ev.flow_pkts[d] = f->pkts[d];
                ev.flow_bytes[d] = f->bytes[d];
            }
            ev.flow_start_ns = f->first_ts_ns;
        }
        ev.direction = f == nullptr                        ? output::AlertDirection::kUnknown
                       : dir == flow::Direction::kToServer ? output::AlertDirection::kToServer
                                                           : output::AlertDirection::kToClient;
        ev.action = a.action == detect::AlertAction::kBlocked ? output::AlertAction::kBlocked
                                                              : output::AlertAction::kAllowed;
        ev.origin = p.has(decode::kFlagReassembled) ? output::PacketOrigin::kDefrag
                                                    : output::PacketOrigin::kWire;
        ev.drop_rule = a.drop_rule;
        if (config_.alert_verdict) {
            ev.verdict = verdict >= PacketVerdict::kDrop   ? output::AlertVerdict::kDrop
                         : verdict == PacketVerdict::kPass ? output::AlertVerdict::kPass
                                                           : output::AlertVerdict::kAlert;
            ev.reject = verdict == PacketVerdict::kReject;
            if (ev.reject) {
                // Named by where the responses go: the sender of a to-server packet is the
                // client.
                const bool to_server = dir == flow::Direction::kToServer;
                switch (reject_target(w.reject_to)) {
                    case RejectTarget::kSender:
                        ev.reject_target = to_server ? output::RejectTargetName::kToClient
                                                     : output::RejectTargetName::kToServer;
                        break;
                    case RejectTarget::kReceiver:
                        ev.reject_target = to_server ? output::RejectTargetName::kToServer
                                                     : output::RejectTargetName::kToClient;
                        break;
                    case RejectTarget::kBoth:
                        ev.reject_target = output::RejectTargetName::kBoth;
                        break;
                }
            }
        }
        const uint8_t* payload = p.payload;
        uint32_t payload_len = p.payload_len;
        if (a.from_stream && stream != nullptr) {
            // Suricata logs the reassembled data that matched, flagged "stream": 1.
            payload = stream->data;
            payload_len = stream->len;
            ev.stream = true;
        }
        w.app_json.clear();
        if (f != nullptr && w.app) {
            ev.app_proto = w.app->proto_name(*f);
            uint64_t tx_id = a.tx_id;
            const bool with_tx = tx || (config_.guess_applayer_tx && w.app->guess_tx(*f, &tx_id));
            if (with_tx) {
                ev.has_tx_id = true;
                ev.tx_id = tx_id;
                w.app->render_metadata(*f, tx_id, &w.app_json);
            }
            if (config_.alert_xff.enabled) {
                // Suricata: the alert's transaction, else the first one that has the header.
                const std::string* v = w.app->http_request_header(
                    *f, tx ? a.tx_id : applayer::AppLayer::kAnyTx, config_.alert_xff.header);
                if (v != nullptr) {
                    ev.xff_len = static_cast<uint8_t>(
                        output::xff_client_ip(*v, config_.alert_xff.reverse, ev.xff));
                }
            }
        }
        if (f != nullptr) {
            ev.flow_action = f->action == flow::FlowAction::kDrop   ? "drop"
                             : f->action == flow::FlowAction::kPass ? "pass"
                                                                    : nullptr;
        }
        if (config_.eve.alert.metadata && w.active->var_names != nullptr) {
            // Suricata's "metadata": the flow's bits, ints and variables and the packet's
            // variables as of the alert.
            detect::append_vars_metadata(detect::flowbits_of(f), w.flow_state->packet_vars(),
                                         *w.active->var_names, &w.app_json);
        }
        const auto* app_json = reinterpret_cast<const uint8_t*>(w.app_json.data());
        const auto app_json_len = static_cast<uint32_t>(w.app_json.size());
        if (!w.alerts->push(ev, packet, packet_len, payload, payload_len, app_json, app_json_len)) {
            ++w.flow_state->counters().alerts_dropped;
        }
    }
}

void Engine::emit_tagged_packet(WorkerContext& w, const decode::Packet& p, const flow::Flow* f,
                                uint32_t link_len) {
    const uint8_t* packet = p.data;
    uint32_t packet_len = p.caplen;
    if (p.has(decode::kFlagReassembled)) {
        // As for its alerts: the last fragment's link header and the whole datagram.
        w.alert_packet.resize(link_len + p.l3_len);
        std::memcpy(w.alert_packet.data(), p.data, link_len);
        std::memcpy(w.alert_packet.data() + link_len, p.l3, p.l3_len);
        packet = w.alert_packet.data();
        packet_len = static_cast<uint32_t>(w.alert_packet.size());
    }
    output::AlertEvent ev;
    ev.tagged = true;
    set_packet_fields(ev, p, f);
    ev.origin = p.has(decode::kFlagReassembled) ? output::PacketOrigin::kDefrag
                                                : output::PacketOrigin::kWire;
    if (!w.alerts->push(ev, packet, packet_len, nullptr, 0)) {
        ++w.flow_state->counters().alerts_dropped;
    }
}

capture::Verdict Engine::process_packet(WorkerContext& w, const capture::RawPacket& raw,
                                        int64_t now_ns) {
    decode::DecodeResult dr = decode::DecodeResult::kOk;
    if (!decode_stage(w, raw, w.pkt, &dr)) {
        return capture::Verdict::kAccept;
    }
    return process_decoded(w, w.pkt, dr, now_ns);
}

bool Engine::decode_stage(WorkerContext& w, const capture::RawPacket& raw, decode::Packet& p,
                          decode::DecodeResult* dr) {
    if (w.user_bpf != nullptr) {
        auto it = w.user_bpf->find(raw.linktype);
        if (it != w.user_bpf->end() && !it->second.matches(raw)) {
            ++w.bpf_filtered;
            return false;
        }
    }
    if (config_.stages == Stage::kRead) {
        return false;
    }
    p.pcap_cnt = raw.pcap_cnt;
    *dr = decode::decode_packet(w.decode, raw.linktype, raw.data, raw.caplen, raw.wirelen,
                                raw.ts_ns, p);
    return true;
}

capture::Verdict Engine::process_decoded(WorkerContext& w, decode::Packet& p,
                                         decode::DecodeResult dr, int64_t now_ns) {
    using capture::Verdict;
    const Stage stages = config_.stages;
    FlowVerdict fv;  // what the rules decided, the stream memcap
    w.drop_meta = nullptr;
    w.reject_to = detect::RejectTo::kNone;
    w.ids_reject = false;
    if (p.event_count != 0 && w.records && config_.eve.anomaly.decode) {
        log_packet_anomalies(w, p, nullptr, 0);
    }
    bool malformed = false;
    flow::Flow* f = nullptr;
    bool no_flow = false;
    if (dr == decode::DecodeResult::kInvalid) {
        // A packet whose IP layer decoded still meets the IP-level rules (as in Suricata); it
        // gets no flow, since its transport header is unusable.
        if (w.active && p.ip_version != 0 && !p.has(decode::kFlagFragment)) {
            uint32_t n = w.active->detect->inspect(p, nullptr, flow::Direction::kToServer,
                                                   w.alert_buf.data(),
                                                   static_cast<uint32_t>(w.alert_buf.size()));
            if (n != 0) {
                fv.verdict = apply_actions(w, nullptr, n);
                emit_alerts(w, p, nullptr, flow::Direction::kToServer, n, 0, fv.verdict);
            }
        }
        malformed = true;
    } else {
        uint32_t link_len = 0;
        bool inspect = true;
        if (dr == decode::DecodeResult::kFragment) {
            // The link header of the last fragment fronts the rebuilt datagram in alert
            // output, as Suricata's reassembled pseudo-packet does. Inline, the fragments
            // before the last pass; the verdict on the datagram falls on its last fragment
            // (dropping it leaves the receiver unable to reassemble the rest).
            link_len = static_cast<uint32_t>(p.l3 - p.data);
            const uint8_t* dgram = nullptr;
            uint32_t dgram_len = 0;
            if (w.defrag.process(p, &dgram, &dgram_len) != defrag::DefragResult::kReassembled) {
                inspect = false;
            } else if (decode::decode_reassembled(w.decode, dgram, dgram_len, p) ==
                       decode::DecodeResult::kInvalid) {
                inspect = false;
                malformed = true;
            } else {
                ++w.reassembled_inspected;
            }
        }
        if (inspect && p.ip_version != 0 && stages != Stage::kDecode) {
            flow::Direction dir = flow::Direction::kToServer;
            f = w.flows.lookup(p, &dir);
            if (f == nullptr) {
                ++w.no_flow;
                no_flow = true;
            }
            if (f != nullptr && f->action == flow::FlowAction::kDrop) {
                // Only IPS mode sets the mark: the flow is dropped, uninspected.
                ++w.drop_flow;
                log_drop(w, p, f, "flow drop");
                return Verdict::kDrop;
            }
            // tls encryption-handling: bypass: nothing more of the flow is looked at.
            const bool bypassed = f != nullptr && w.app && w.app->bypassed(*f);
            if ((f == nullptr || f->action != flow::FlowAction::kPass) && !bypassed) {
                // Checked before the packet's own inspection: the packet whose alert installs
                // a tag is not tagged by it (Suricata's tag counts the packets that follow).
                const bool tagged = w.active && config_.eve_enabled && config_.eve.types.alert &&
                                    config_.eve.alert.tagged_packets && detect::tag_packet(p, f);
                fv = inspect_flow_packet(w, p, f, dir, link_len, now_ns);
                if (tagged) {
                    emit_tagged_packet(w, p, f, link_len);
                }
            }
            if (f != nullptr && w.app && !w.app->records().empty()) {
                emit_app_records(w, *f, p.ts_ns, p.pcap_cnt, &p);
            }
        }
    }
    if (!config_.ips()) {
        if (w.ids_reject) {
            // The packet went on (a passive sensor cannot stop it): the RST toward its
            // receiver follows it (seq past its payload).
            w.responder->reject(p, reject_target(w.reject_to), /*original_dropped=*/false);
        }
        return Verdict::kAccept;
    }
    // One reason per drop, the rules first.
    if (fv.verdict >= PacketVerdict::kDrop) {
        ++w.drop_rules;
        if (fv.verdict == PacketVerdict::kReject) {
            ++w.ips_rejected;
            if (w.responder) {
                // The packet itself is dropped: the RST toward its receiver carries its seq.
                w.responder->reject(p, reject_target(w.reject_to), /*original_dropped=*/true);
            }
        }
        log_drop(w, p, f, "rules");
        return Verdict::kDrop;
    }
    if (malformed && config_.malformed_drop) {
        ++w.drop_decode;
        log_drop(w, p, f, "decode error");
        return Verdict::kDrop;
    }
    if (!config_.fail_open) {
        if (fv.stream_memcap) {
            ++w.drop_stream_memcap;
            log_drop(w, p, f, "stream memcap");
            return Verdict::kDrop;
        }
        if (no_flow) {
            ++w.drop_flow_memcap;
            log_drop(w, p, f, "flow memcap");
            return Verdict::kDrop;
        }
    }
    return Verdict::kAccept;
}

}  // namespace picket::sensor::engine
