// HTTP files through the app-layer glue: the file.data / file.name views detection gets (one
// view per uploaded file of a multipart request), and one EVE fileinfo record per file.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <string>
#include <vector>

#include "sensor/applayer/applayer.h"

namespace picket::sensor::applayer {
namespace {

using flow::Direction;
using inspect::AppProto;
using inspect::BufferId;

std::string_view buf(const inspect::AppView& v, BufferId b) {
    return v.buf[static_cast<size_t>(b)];
}

std::string sha256(const std::string& s) {
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(s.data(), s.size(), md, &n, EVP_sha256(), nullptr);
    std::string hex;
    char two[3];
    for (unsigned i = 0; i < n; ++i) {
        std::snprintf(two, sizeof(two), "%02x", md[i]);
        hex += two;
    }
    return hex;
}

const std::string kBody =
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"comment\"\r\n"
    "\r\n"
    "a field\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"f1\"; filename=\"notes.txt\"\r\n"
    "Content-Type: text/plain\r\n"
    "\r\n"
    "harmless text\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"f2\"; filename=\"evil.exe\"\r\n"
    "\r\n"
    "MZ payload\r\n"
    "--XyZ--\r\n";

const std::string kUpload =
    "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n"
    "Content-Length: " +
    std::to_string(kBody.size()) + "\r\n\r\n" + kBody;

class FilesTest : public ::testing::Test {
protected:
    void TearDown() override { app_.release_flow(flow_); }
    uint32_t feed(Direction d, const std::string& s) {
        return app_.on_data(flow_, d, reinterpret_cast<const uint8_t*>(s.data()), s.size(), true,
                            out_, 8);
    }
    AppLayerConfig config_;
    AppLayer app_{config_};
    flow::Flow flow_;
    TxUpdate out_[8];
};

TEST_F(FilesTest, MultipartUploadGivesOneViewPerFile) {
    const uint32_t n = feed(Direction::kToServer, kUpload);
    ASSERT_EQ(n, 2u);
    for (uint32_t i = 0; i < n; ++i) {
        EXPECT_EQ(out_[i].view.proto, AppProto::kHttp);
        EXPECT_EQ(out_[i].view.tx_id, 0u);
        EXPECT_EQ(buf(out_[i].view, BufferId::kHttpUri), "/upload");
        // http.request_body is the raw multipart body in every view.
        EXPECT_EQ(buf(out_[i].view, BufferId::kHttpRequestBody), kBody);
    }
    EXPECT_EQ(buf(out_[0].view, BufferId::kFileName), "notes.txt");
    EXPECT_EQ(buf(out_[0].view, BufferId::kFileData), "harmless text");
    EXPECT_EQ(buf(out_[1].view, BufferId::kFileName), "evil.exe");
    EXPECT_EQ(buf(out_[1].view, BufferId::kFileData), "MZ payload");
}

TEST_F(FilesTest, PostAndPutBodiesAreFilesOtherMethodsAreNot) {
    ASSERT_EQ(feed(Direction::kToServer,
                   "PUT /dir/up.bin?v=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nDATA"),
              1u);
    EXPECT_EQ(buf(out_[0].view, BufferId::kHttpRequestBody), "DATA");
    EXPECT_EQ(buf(out_[0].view, BufferId::kFileData), "DATA");
    EXPECT_EQ(buf(out_[0].view, BufferId::kFileName), "/dir/up.bin");
    ASSERT_EQ(
        feed(Direction::kToServer, "PATCH /p HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nBODY"),
        1u);
    EXPECT_EQ(buf(out_[0].view, BufferId::kHttpRequestBody), "BODY");
    EXPECT_TRUE(buf(out_[0].view, BufferId::kFileData).empty());
    // The response body is the to_client file.
    ASSERT_GE(feed(Direction::kToClient,
                   "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                   "HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename=\"r.zip\"\r\n"
                   "Content-Length: 3\r\n\r\nzip"),
              2u);
    EXPECT_EQ(buf(out_[0].view, BufferId::kFileData), "ok");
    EXPECT_EQ(buf(out_[0].view, BufferId::kFileName), "/dir/up.bin");
    EXPECT_EQ(buf(out_[0].view, BufferId::kHttpResponseBody), "ok");
    EXPECT_EQ(buf(out_[1].view, BufferId::kFileData), "zip");
    EXPECT_EQ(buf(out_[1].view, BufferId::kFileName), "r.zip");
}

TEST(FileRecordsMultipart, OneFileinfoPerUploadedFile) {
    AppLayerConfig c;
    c.log.files = true;
    c.log.file_sha256 = true;
    AppLayer app(c);
    flow::Flow flow;
    TxUpdate out[8];
    // Fed in 3-byte pieces: the files are the same.
    for (size_t i = 0; i < kUpload.size(); i += 3) {
        const std::string piece = kUpload.substr(i, 3);
        app.on_data(flow, Direction::kToServer, reinterpret_cast<const uint8_t*>(piece.data()),
                    piece.size(), true, out, 8);
    }
    std::vector<std::string> recs;
    for (const AppRecord& r : app.records()) {
        EXPECT_STREQ(r.event_type, "fileinfo");
        EXPECT_EQ(r.dir, Direction::kToServer);
        EXPECT_EQ(r.tx_id, 0u);
        recs.push_back(app.records_json().substr(r.offset, r.len));
    }
    app.clear_records();
    app.release_flow(flow);
    ASSERT_EQ(recs.size(), 2u);
    const std::string http =
        "\"http\":{\"hostname\":\"h\",\"url\":\"/upload\",\"http_method\":\"POST\","
        "\"protocol\":\"HTTP/1.1\","
        "\"length\":0},\"app_proto\":\"http\",\"fileinfo\":{";
    EXPECT_EQ(recs[0], http +
                           "\"filename\":\"notes.txt\",\"gaps\":false,\"state\":\"CLOSED\","
                           "\"sha256\":\"" +
                           sha256("harmless text") +
                           "\",\"stored\":false,\"size\":13,\"tx_id\":0}");
    EXPECT_EQ(recs[1], http +
                           "\"filename\":\"evil.exe\",\"gaps\":false,\"state\":\"CLOSED\","
                           "\"sha256\":\"" +
                           sha256("MZ payload") + "\",\"stored\":false,\"size\":10,\"tx_id\":0}");
}

}  // namespace
}  // namespace picket::sensor::applayer
