//! The runner application downloads GitHub lists under `…/actions/runners/downloads`: one small
//! placeholder archive per usual platform, built once per simulator and served under the
//! simulator's own origin at github.com's release path, with a SHA-256 that matches its bytes.
//!
//! The archives are real (a `.tar.gz` or a `.zip` holding one text file that says what it is),
//! so a tool that downloads, verifies and unpacks the runner gets that far; they contain no
//! runner.

use bytes::Bytes;
use ring::digest;

/// The runner version the simulator claims (also reported by its agents).
pub(crate) const RUNNER_VERSION: &str = "2.330.0";

/// The platforms GitHub lists, as `(os, architecture)`.
const PLATFORMS: [(&str, &str); 7] = [
    ("osx", "x64"),
    ("osx", "arm64"),
    ("linux", "x64"),
    ("linux", "arm"),
    ("linux", "arm64"),
    ("win", "x64"),
    ("win", "arm64"),
];

/// One downloadable placeholder runner archive.
#[derive(Debug, Clone)]
pub(crate) struct Archive {
    /// `osx`, `linux` or `win`.
    pub(crate) os: &'static str,
    /// `x64`, `arm` or `arm64`.
    pub(crate) architecture: &'static str,
    /// `actions-runner-{os}-{arch}-{version}.tar.gz` (`.zip` on Windows).
    pub(crate) filename: String,
    /// The archive's bytes.
    pub(crate) bytes: Bytes,
    /// Lowercase hex SHA-256 of `bytes`.
    pub(crate) sha256: String,
}

/// Every archive of one simulator.
#[derive(Debug, Clone)]
pub(crate) struct RunnerDownloads {
    archives: Vec<Archive>,
}

impl RunnerDownloads {
    /// Builds the placeholder archive of every platform.
    pub(crate) fn new() -> Self {
        let archives = PLATFORMS
            .iter()
            .map(|&(os, architecture)| {
                let windows = os == "win";
                let extension = if windows { "zip" } else { "tar.gz" };
                let filename =
                    format!("actions-runner-{os}-{architecture}-{RUNNER_VERSION}.{extension}");
                let text = format!(
                    "Placeholder for the GitHub Actions runner {RUNNER_VERSION} ({os}-{architecture}), \
                     served by scaleset-sim. It contains no runner.\n"
                );
                let bytes = if windows {
                    zip("README.scaleset-sim.txt", text.as_bytes())
                } else {
                    tar_gz("README.scaleset-sim.txt", text.as_bytes())
                };
                let sha256 = hex(digest::digest(&digest::SHA256, &bytes).as_ref());
                Archive {
                    os,
                    architecture,
                    filename,
                    bytes: Bytes::from(bytes),
                    sha256,
                }
            })
            .collect();
        Self { archives }
    }

    /// Every archive, in GitHub's listing order.
    pub(crate) fn archives(&self) -> &[Archive] {
        &self.archives
    }

    /// The archive served at release `tag` under `filename`, if there is one.
    pub(crate) fn find(&self, tag: &str, filename: &str) -> Option<&Archive> {
        if tag.strip_prefix('v') != Some(RUNNER_VERSION) {
            return None;
        }
        self.archives.iter().find(|a| a.filename == filename)
    }
}

/// The release path an archive is served under (github.com's, on the simulator's origin).
pub(crate) fn release_path(filename: &str) -> String {
    format!("/actions/runner/releases/download/v{RUNNER_VERSION}/{filename}")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// CRC-32 (IEEE), as gzip and zip require.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// A ustar archive holding one regular file (mode 0644, mtime 0).
fn tar(name: &str, content: &[u8]) -> Vec<u8> {
    let mut header = [0u8; 512];
    let put = |header: &mut [u8; 512], at: usize, field: &[u8]| {
        header[at..at + field.len()].copy_from_slice(field);
    };
    put(&mut header, 0, name.as_bytes());
    put(&mut header, 100, b"0000644\0");
    put(&mut header, 108, b"0000000\0");
    put(&mut header, 116, b"0000000\0");
    put(
        &mut header,
        124,
        format!("{:011o}\0", content.len()).as_bytes(),
    );
    put(&mut header, 136, b"00000000000\0");
    put(&mut header, 148, b"        ");
    header[156] = b'0';
    put(&mut header, 257, b"ustar\0");
    put(&mut header, 263, b"00");
    let checksum: u32 = header.iter().map(|&b| u32::from(b)).sum();
    put(&mut header, 148, format!("{checksum:06o}\0 ").as_bytes());
    let mut out = header.to_vec();
    out.extend_from_slice(content);
    out.resize(out.len().div_ceil(512) * 512, 0);
    // Two zero blocks end the archive.
    out.resize(out.len() + 1024, 0);
    out
}

/// `tar(name, content)` in a gzip member of stored (uncompressed) deflate blocks.
fn tar_gz(name: &str, content: &[u8]) -> Vec<u8> {
    let data = tar(name, content);
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let mut chunks = data.chunks(0xffff).peekable();
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        out.push(u8::from(last));
        let len = u16::try_from(chunk.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&crc32(&data).to_le_bytes());
    let size = u32::try_from(data.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&size.to_le_bytes());
    out
}

/// A zip archive holding one stored (uncompressed) file dated 1980-01-01.
fn zip(name: &str, content: &[u8]) -> Vec<u8> {
    let crc = crc32(content).to_le_bytes();
    let size = u32::try_from(content.len())
        .unwrap_or(u32::MAX)
        .to_le_bytes();
    let name_len = u16::try_from(name.len()).unwrap_or(u16::MAX).to_le_bytes();
    let date: [u8; 2] = 0x0021u16.to_le_bytes();
    let mut out = Vec::new();
    // Local file header.
    out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
    out.extend_from_slice(&20u16.to_le_bytes());
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&date);
    out.extend_from_slice(&crc);
    out.extend_from_slice(&size);
    out.extend_from_slice(&size);
    out.extend_from_slice(&name_len);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(content);
    let directory_at = u32::try_from(out.len()).unwrap_or(u32::MAX);
    // Central directory entry.
    out.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
    out.extend_from_slice(&20u16.to_le_bytes());
    out.extend_from_slice(&20u16.to_le_bytes());
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&date);
    out.extend_from_slice(&crc);
    out.extend_from_slice(&size);
    out.extend_from_slice(&size);
    out.extend_from_slice(&name_len);
    out.extend_from_slice(&[0; 12]);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    let directory_len = u32::try_from(out.len())
        .unwrap_or(u32::MAX)
        .saturating_sub(directory_at);
    // End of central directory.
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&directory_len.to_le_bytes());
    out.extend_from_slice(&directory_at.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn tar_headers_carry_a_valid_checksum_and_the_content() {
        let archive = tar("a.txt", b"hello");
        assert_eq!(archive.len(), 512 + 512 + 1024);
        let mut header = archive[..512].to_vec();
        let stored = std::str::from_utf8(&header[148..154]).expect("octal digits");
        let stored = u32::from_str_radix(stored, 8).expect("octal");
        header[148..156].copy_from_slice(b"        ");
        assert_eq!(stored, header.iter().map(|&b| u32::from(b)).sum::<u32>());
        assert_eq!(&archive[512..517], b"hello");
        assert_eq!(&archive[257..262], b"ustar");
    }

    #[test]
    fn gzip_members_wrap_the_tar_with_its_crc_and_size() {
        let gz = tar_gz("a.txt", b"hello");
        let data = tar("a.txt", b"hello");
        assert_eq!(&gz[..3], &[0x1f, 0x8b, 8]);
        // One final stored block: BFINAL=1, LEN, NLEN, the bytes.
        assert_eq!(gz[10], 1);
        let len = u16::from_le_bytes([gz[11], gz[12]]);
        assert_eq!(usize::from(len), data.len());
        assert_eq!(u16::from_le_bytes([gz[13], gz[14]]), !len);
        assert_eq!(&gz[15..15 + data.len()], &data[..]);
        let trailer = &gz[gz.len() - 8..];
        assert_eq!(trailer[..4], crc32(&data).to_le_bytes());
        assert_eq!(trailer[4..], (data.len() as u32).to_le_bytes());
    }

    #[test]
    fn every_platform_is_listed_once_with_a_matching_checksum() {
        let downloads = RunnerDownloads::new();
        assert_eq!(downloads.archives().len(), PLATFORMS.len());
        for archive in downloads.archives() {
            let digest = hex(digest::digest(&digest::SHA256, &archive.bytes).as_ref());
            assert_eq!(archive.sha256, digest, "{}", archive.filename);
            let found = downloads.find(&format!("v{RUNNER_VERSION}"), &archive.filename);
            assert_eq!(found.map(|a| &a.filename), Some(&archive.filename));
            let magic: &[u8] = if archive.os == "win" {
                b"PK\x03\x04"
            } else {
                b"\x1f\x8b"
            };
            assert!(archive.bytes.starts_with(magic), "{}", archive.filename);
        }
        assert!(
            downloads
                .find("v0.0.1", "actions-runner-linux-x64-2.330.0.tar.gz")
                .is_none()
        );
        assert!(
            downloads
                .find(&format!("v{RUNNER_VERSION}"), "other.tar.gz")
                .is_none()
        );
    }
}
