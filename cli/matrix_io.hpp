#pragma once
// Reading and writing vectors and matrices for the CLI: Matrix Market (.mtx, coordinate,
// readable by scipy.io.mmread), NumPy (.npy, little-endian float64/float32/int64; .npz, a
// sparse matrix as scipy.sparse.save_npz writes it, see npz.hpp), text (.txt: whitespace
// separated; .csv: comma separated). Numbers are written with 17 significant digits (9 for
// float32) so they read back identically; .npy and .npz hold the bits themselves. Files are
// written to a temporary name and renamed, so a refused or failed write leaves nothing
// half-written (output_file.hpp). "-" as a path means stdout (text formats only). A write shows
// a progress bar on a terminal when it takes over a second.

#include <Eigen/Core>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pathlift/sparse.hpp"

namespace pathlift::cli {

enum class FileFormat { mtx, npy, npz, txt, csv, json };

/// The extension of the file name in `path`, lower case, without the dot ("" when none).
std::string file_extension(const std::string& path);

/// The matrix format from the file's extension ("-" is txt). Throws FormatError for another one.
FileFormat format_of(const std::string& path);

/// What a file holds: a vector, a sparse or dense matrix (the writers below), lines of text
/// (`paths`), a CSV table (`bench --csv`), a pathlift-network JSON document (`convert`).
enum class Content { vector, sparse, dense, text, table, network };

/// The format of `path` for writing `content`, the one home of "the format follows the
/// extension or is refused": a FormatError naming the file and the formats that hold the
/// content when it cannot (.npz holds only a sparse matrix, .npy only a vector or a dense
/// matrix, text only .txt, a table only .csv, a network only .json; "-", stdout, takes text
/// but not a table). First refuses a path that cannot be written (check_output_path: a
/// directory, a missing or read-only folder). Every writer checks it; a command calls it before
/// computing, so that a wrong name is refused at once; `hint` ends the message (a command's way
/// out, e.g. its flag).
FileFormat output_format(const std::string& path, Content content, std::string_view hint = {});

/// A vector (Phi, theta, a diagonal): .npy (1-D), .txt/.csv (one number a line), .mtx (array).
/// .npz is refused.
template <class T>
void write_vector(const std::string& path, std::span<const T> values);

/// A sparse matrix: .npz (scipy.sparse.load_npz gives a csr_matrix of T; int32 indices when
/// nnz, rows and columns fit, else int64), .mtx (coordinate real general, 1-based), .txt/.csv
/// ("row col value" lines, 0-based). .npy is refused (dense output goes through write_dense).
template <class T>
void write_csr(const std::string& path, const CsrMatrix<T>& m);

/// A pattern (B): .npz (float64 ones, as pathlift.skeleton gives it in Python), .mtx
/// (coordinate pattern), .txt/.csv ("row col 1" lines).
void write_pattern(const std::string& path, const CsrPattern& b);

/// A dense row-major matrix: .npy (2-D), .txt/.csv (one row a line), .mtx (array format).
/// .npz is refused.
template <class T>
void write_dense(const std::string& path, const T* data, Index rows, Index cols);

/// A vector of numbers: .npy (1-D, or 2-D with one row or column; float64, float32, int32,
/// int64), or text (.txt/.csv or any other extension: numbers separated by whitespace or
/// commas). Throws FormatError naming the file and the offending entry (also for NaN/inf
/// when `finite` is set). The file is read under the memory limit `max_memory` (0: default;
/// max_input_bytes in io.hpp).
std::vector<double> read_vector(const std::string& path, bool finite = true,
                                std::size_t max_memory = 0);

/// A matrix (n x r, row-major): .npy (2-D; a 1-D array is one column) or .csv/.txt (one row a
/// line, commas or whitespace; lines starting with '#' skipped). Throws FormatError for an
/// empty file, ragged rows, non-numbers, and (with `finite`) NaN/inf, naming row and column.
Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> read_matrix(
    const std::string& path, bool finite = true, std::size_t max_memory = 0);

}  // namespace pathlift::cli
