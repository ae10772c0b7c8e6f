// What travels between the demo's stages: fixed-size messages (a header and
// a 256 KiB float tensor), so every receive can be posted ahead of time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mwcli {

constexpr size_t kTensorFloats = 64 * 1024;
constexpr uint32_t kDemoMagic = 0x6d77646d;  // "mwdm"

enum class MsgKind : uint32_t {
  Request = 1,       // leader -> S1 -> replica -> S3: a tensor to transform
  Result = 2,        // S3 -> leader
  ReplicaDown = 3,   // S1/S3 -> leader: that replica's worlds broke
  Nack = 4,          // S1 -> leader: could not forward to the chosen replica
  AddReplica = 5,    // leader -> S1/S3: form worlds with a new replica
  ReplicaReady = 6,  // S1/S3 -> leader: worlds with it are formed
  Stop = 7,          // leader -> everyone, downstream
};

struct Header {
  uint32_t magic = kDemoMagic;
  MsgKind kind = MsgKind::Request;
  uint64_t req_id = 0;
  int32_t replica = -1;
  int32_t attempt = 0;
};

struct Message {
  Header h;
  float tensor[kTensorFloats];
};

// Each stage's deterministic transform; the leader checks the composition.
inline float stage1(float v) { return v * 2.0f; }
inline float stage2(float v) { return v + 3.0f; }
inline float stage3(float v) { return v * 0.5f; }
inline float inputValue(uint64_t req_id, size_t i) {
  return static_cast<float>((req_id * 7 + i) % 4096);
}

// World names of the topology: every connected pair has its own world.
inline std::string leaderToS1() { return "demo.L-S1"; }
inline std::string s3ToLeader() { return "demo.S3-L"; }
inline std::string s1ToReplica(int k) { return "demo.S1-R" + std::to_string(k); }
inline std::string replicaToS3(int k) { return "demo.R" + std::to_string(k) + "-S3"; }

}  // namespace mwcli
