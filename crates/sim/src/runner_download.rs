//! The runner application downloads GitHub lists under `…/actions/runners/downloads`: one small
//! runner archive per usual platform, built once per simulator and served under the
//! simulator's own origin at github.com's release path, with a SHA-256 that matches its bytes.
//!
//! The archives are real. A Windows `.zip` holds one text file that says what it is. A Linux or
//! macOS `.tar.gz` holds that file and a simulated runner: `config.sh` and `run.sh` (bash and
//! curl, as GARM's images have) do with the JIT configuration files GARM's install script writes
//! into the runner directory (`.runner`, `.credentials`, `.credentials_rsaparams`) what the real
//! runner does: connect to the Actions service the `.runner` file names, as the agent it names
//! (`POST /_sim/runners` with the files re-encoded as an `encodedJITConfig`), take the job the
//! simulator assigns, and exit once it is done. So a provider's install script can be executed
//! for real against the simulator: download, checksum, unpack, configure, run.

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

/// One downloadable runner archive (a simulated runner on Linux and macOS).
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
    /// Builds the archive of every platform.
    pub(crate) fn new() -> Self {
        let archives = PLATFORMS
            .iter()
            .map(|&(os, architecture)| {
                let windows = os == "win";
                let extension = if windows { "zip" } else { "tar.gz" };
                let filename =
                    format!("actions-runner-{os}-{architecture}-{RUNNER_VERSION}.{extension}");
                let contents = if windows {
                    "It contains no runner."
                } else {
                    "Its config.sh and run.sh are a simulated runner that works against \
                     scaleset-sim only."
                };
                let text = format!(
                    "Stand-in for the GitHub Actions runner {RUNNER_VERSION} ({os}-{architecture}), \
                     served by scaleset-sim. {contents}\n"
                );
                let bytes = if windows {
                    zip("README.scaleset-sim.txt", text.as_bytes())
                } else {
                    tar_gz(&[
                        ("README.scaleset-sim.txt", 0o644, text.as_bytes()),
                        ("config.sh", 0o755, CONFIG_SH.as_bytes()),
                        ("run.sh", 0o755, RUN_SH.as_bytes()),
                    ])
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

/// The simulated runner's `config.sh`: checks the JIT configuration files are in its directory
/// and encodes them as the `encodedJITConfig` the Actions service issued (base64 of a JSON object
/// of the three files' base64), into `.jitconfig`. Refuses, exit 1, when a file is missing.
const CONFIG_SH: &str = r#"#!/bin/bash
# Simulated GitHub Actions runner (scaleset-sim): configure from the JIT files.
set -euo pipefail
cd "$(dirname "$0")"
for f in .runner .credentials .credentials_rsaparams; do
  if [ ! -s "$f" ]; then
    echo "config.sh: the JIT configuration file $f is missing or empty in $PWD; write the files the metadata URL serves first" >&2
    exit 1
  fi
done
b() { base64 -w0 < "$1"; }
printf '{".runner":"%s",".credentials":"%s",".credentials_rsaparams":"%s"}' \
  "$(b .runner)" "$(b .credentials)" "$(b .credentials_rsaparams)" | base64 -w0 > .jitconfig
echo "config.sh: configured from the JIT files"
"#;

/// The simulated runner's `run.sh`: connects to the server its `.runner` names as the agent it
/// names, writes the agent id to `.agent_id` once connected (an install script reports it in its
/// `idle` callback), then stays up until the simulator has deregistered the agent (its one job
/// done, as an ephemeral runner exits) or `RUNNER_MAX_SECONDS` (default 600) pass.
const RUN_SH: &str = r#"#!/bin/bash
# Simulated GitHub Actions runner (scaleset-sim): connect with the JIT configuration, take a job.
set -euo pipefail
cd "$(dirname "$0")"
[ -s .jitconfig ] || ./config.sh
server=$(sed -n 's/.*"ServerUrl" *: *"\([^"]*\)".*/\1/p' .runner)
agent=$(sed -n 's/.*"AgentId" *: *\([0-9][0-9]*\).*/\1/p' .runner)
if [ -z "$server" ] || [ -z "$agent" ]; then
  echo "run.sh: .runner names no ServerUrl or AgentId; it is not a JIT configuration" >&2
  exit 1
fi
origin=$(printf '%s' "$server" | sed -E 's#^(https?://[^/]+).*#\1#')
curl -fsS --max-time 30 -X POST -H 'content-type: application/json' \
  --data "{\"jitConfig\":\"$(cat .jitconfig)\"}" "$origin/_sim/runners" > .connected
echo "$agent" > .agent_id
echo "run.sh: connected as agent $agent"
deadline=$(( $(date +%s) + ${RUNNER_MAX_SECONDS:-600} ))
while [ "$(date +%s)" -lt "$deadline" ]; do
  # The agent leaves the simulator's state when its job is done (ephemeral runners deregister).
  if ! curl -fsS --max-time 10 "$origin/_sim/state" | tr -d ' \n' | grep -q "\"agents\":\[.*{\"id\":$agent,"; then
    echo "run.sh: job done, agent $agent deregistered"
    exit 0
  fi
  sleep 0.2
done
echo "run.sh: agent $agent still registered after ${RUNNER_MAX_SECONDS:-600} s" >&2
exit 1
"#;

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

/// A ustar archive of regular files `(name, mode, content)` (mtime 0).
fn tar(entries: &[(&str, u32, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for &(name, mode, content) in entries {
        let mut header = [0u8; 512];
        let put = |header: &mut [u8; 512], at: usize, field: &[u8]| {
            header[at..at + field.len()].copy_from_slice(field);
        };
        put(&mut header, 0, name.as_bytes());
        put(&mut header, 100, format!("{mode:07o}\0").as_bytes());
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
        out.extend_from_slice(&header);
        out.extend_from_slice(content);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    // Two zero blocks end the archive.
    out.resize(out.len() + 1024, 0);
    out
}

/// `tar(entries)` in a gzip member of stored (uncompressed) deflate blocks.
fn tar_gz(entries: &[(&str, u32, &[u8])]) -> Vec<u8> {
    let data = tar(entries);
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
        let archive = tar(&[("a.txt", 0o644, b"hello")]);
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
        let gz = tar_gz(&[("a.txt", 0o644, b"hello")]);
        let data = tar(&[("a.txt", 0o644, b"hello")]);
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

    /// The entries of a stored-block `tar_gz` as `(name, mode)`.
    fn entries_of(gz: &[u8]) -> Vec<(String, String)> {
        let mut data = Vec::new();
        let mut at = 10;
        loop {
            let last = gz[at] == 1;
            let len = usize::from(u16::from_le_bytes([gz[at + 1], gz[at + 2]]));
            data.extend_from_slice(&gz[at + 5..at + 5 + len]);
            at += 5 + len;
            if last {
                break;
            }
        }
        let mut entries = Vec::new();
        let mut at = 0;
        while data[at] != 0 {
            let header = &data[at..at + 512];
            let text = |range: std::ops::Range<usize>| {
                String::from_utf8_lossy(&header[range])
                    .trim_end_matches('\0')
                    .to_owned()
            };
            let size = usize::from_str_radix(&text(124..135), 8).expect("octal size");
            entries.push((text(0..100), text(100..107)));
            at += 512 + size.div_ceil(512) * 512;
        }
        entries
    }

    #[test]
    fn linux_and_macos_archives_carry_an_executable_simulated_runner() {
        let downloads = RunnerDownloads::new();
        for archive in downloads.archives().iter().filter(|a| a.os != "win") {
            let entries = entries_of(&archive.bytes);
            for script in ["config.sh", "run.sh"] {
                assert!(
                    entries.contains(&(script.to_owned(), "0000755".to_owned())),
                    "{}: {entries:?}",
                    archive.filename
                );
            }
        }
        assert!(RUN_SH.contains("/_sim/runners") && RUN_SH.contains(".agent_id"));
        assert!(CONFIG_SH.contains(".credentials_rsaparams"));
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
