#pragma once
/// \file io.hpp
/// The network file format `pathlift-network` versions 1 and 2 (JSON; version 2: parameters
/// distinct from edges, "num_params" and "params"), documented in docs/file-format.md. The
/// readers also take a layer graph (`"format": "pathlift-layers"`, layers.hpp), unrolled.
/// \code{.json}
///   {"format": "pathlift-network", "version": 1,
///    "nodes": ["a", "c", "g", "d", "f", "h"],
///    "edges": [["a", "d"], ["a", "f"], ["c", "d"], ["c", "f"], ["d", "h"], ["f", "h"], ["g",
///    "h"]], "weights": [0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 3.0], "outputs": ["h"], "bias": ["g"],
///    "activations": {"d": "relu"}}
/// \endcode
/// `nodes` may be an integer n (names "0".."n-1"); a node reference is a name (JSON string) or
/// a 0-based index (JSON integer). `weights`, `outputs`, `bias`, `activations` are optional.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "pathlift/network.hpp"
#include "pathlift/options.hpp"

namespace pathlift {

/// Parses a network from JSON text. Throws FormatError naming the key (and the index of the
/// offending entry) for bad JSON or a bad field, NetworkError for an invalid network.
/// Complexity: O(size of the text).
Network parse_network(std::string_view json_text);

/// How much memory an input file's contents can take once parsed, per byte of the file: the
/// factor by which max_input_bytes() divides the memory limit.
enum class InputKind : unsigned {
  json = 16,   ///< a network or layer-graph file: the parsed document takes ~10-20x its text
  text = 8,    ///< numbers in text ("1\n" becomes an 8-byte double, plus the text itself)
  binary = 2,  ///< .npy, ONNX: the bytes plus the values decoded from them
};

/// The largest input file of `kind` read under the memory limit `max_memory` (0: the default,
/// half of physical RAM): effective_max_memory(max_memory) / kind, so that reading and parsing
/// it fit in the limit.
std::size_t max_input_bytes(InputKind kind, std::size_t max_memory = 0);

/// What a stream (a pipe, a device: a file without a size) read by read_input_file must start
/// like; one that cannot is refused as soon as its bytes show it (/dev/zero as an ONNX model at
/// its first byte), not after the bound.
enum class StreamFormat : std::uint8_t {
  any,           ///< no check
  json,          ///< a JSON object: '{' after any whitespace
  onnx,          ///< protobuf: top-level fields with a valid tag, wire type and length
  json_or_onnx,  ///< either (a model file): '{' decides
  npy,           ///< the .npy magic "\x93NUMPY"
  text           ///< no NUL byte
};

/// The bytes of the file at `path`, read under a bound: the one reader of every input file
/// (networks, layer graphs, ONNX models, theta and data). Throws FormatError naming the file
/// (as `what`: "network file") when it is missing, unreadable (with the system's reason) or a
/// directory, and TooLarge naming the file and the bound when it holds more than `max_bytes`:
/// refused from its size for a regular file, after reading `max_bytes` + 1 bytes for a pipe or
/// a device (/dev/zero does not exhaust memory, and is refused at once when `format` says what
/// the stream must start like: FormatError naming the byte). Complexity:
/// O(min(file size, max_bytes)).
std::string read_input_file(const std::string& path, std::size_t max_bytes,
                            std::string_view what = "file",
                            StreamFormat format = StreamFormat::any);

/// Reads a network file of at most max_input_bytes(InputKind::json, max_memory) bytes.
/// Throws FormatError when the file cannot be read or parsed, TooLarge when it is too large.
Network read_network(const std::string& path, const EngineOptions& options = {});

/// The network as `pathlift-network` JSON: version 1 with one parameter per edge, else version
/// 2 (weights included when the network has them).
/// `indent` < 0 writes one line; otherwise pretty-printed with that indent.
std::string network_to_json(const Network& net, int indent = -1);

/// Refuses an output path that cannot be written, before any work: FormatError naming it when
/// it is empty, a directory, an existing file that is not a regular file (a FIFO, a device, a
/// socket: the rename onto it would replace it; a symlink is followed to its file for this
/// check, and the link itself is what the rename replaces), or its folder does not exist or is
/// not writable; the message says "cannot write WHAT 'PATH'" ("cannot write 'PATH'" without
/// `what`). Every writer of pathlift's files (the CLI's -o, write_network) calls it.
void check_output_path(const std::string& path, std::string_view what = "");

/// The folder of an output path ("." for a bare name).
std::string output_folder(const std::string& path);

/// Writes `bytes` to the file at `path` in full or not at all (check_output_path first): to a new
/// hidden temporary file
/// `.NAME.XXXXXX.tmp` next to it, created with O_CREAT | O_EXCL (no symlink is followed, no
/// existing file is reused), given the permissions of a new file (0666 & ~umask) and renamed
/// onto `path` when complete. Every write, the close and the rename are checked; on a failure
/// the temporary is removed and FormatError("cannot write WHAT 'PATH': reason") is thrown. No
/// signal handler is installed: a process killed during the write may leave the temporary.
/// Complexity: O(bytes.size()).
void write_file_atomically(const std::string& path, std::string_view bytes,
                           std::string_view what = "file");

// The steps of such a write, for writers that own the temporary's life themselves (the CLI's
// output files, removed on a signal). Each returns 0 or the errno of its failure.

/// The mkstemps template of the temporary for `path`: `DIR/.NAME.XXXXXX.tmp` (NAME cut at 200
/// bytes, within NAME_MAX); its suffix is temporary_suffix.
std::string temporary_template(const std::string& path);
inline constexpr std::string_view temporary_suffix = ".tmp";

/// Writes all `bytes` bytes at `data` to the descriptor `fd` (again after EINTR and partial
/// writes; a write of 0 bytes is ENOSPC).
int write_all(int fd, const void* data, std::size_t bytes);

/// Completes the temporary `tmp` open on `fd`: the permissions of a new file (0666 & ~umask),
/// closed (always, even on a failure), renamed onto `path`. The caller removes `tmp` on failure.
int install_temporary(int fd, const std::string& tmp, const std::string& path);

/// Writes network_to_json(net, 1) to `path` with write_file_atomically(). Throws FormatError
/// when the file cannot be written.
void write_network(const Network& net, const std::string& path);

}  // namespace pathlift
