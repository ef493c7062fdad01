//! The operating system and CPU architecture a scale set's runners run on: [`OsType`] and
//! [`OsArch`], spelled as GARM's `os_type` and `arch` bootstrap parameters spell them, and how
//! each maps to GitHub's runner downloads (`os`, `architecture`).

use std::fmt;

/// A runner's operating system (GARM's `os_type`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum OsType {
    /// `linux` (the default).
    #[default]
    Linux,
    /// `windows`.
    Windows,
    /// `osx` (macOS).
    Osx,
}

/// A runner's CPU architecture (GARM's `arch`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum OsArch {
    /// `amd64` (x86-64, the default).
    #[default]
    Amd64,
    /// `arm64`.
    Arm64,
    /// `arm` (32-bit ARM).
    Arm,
    /// `386` (32-bit x86).
    I386,
}

impl OsType {
    /// Every value, in the order problems list them.
    pub const ALL: [Self; 3] = [Self::Linux, Self::Windows, Self::Osx];

    /// GARM's spelling (`linux`, `windows`, `osx`), as stored and written at every door.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Linux => "linux",
            Self::Windows => "windows",
            Self::Osx => "osx",
        }
    }

    /// The value GARM spells `text`, if any.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// The `os` of GitHub's runner download for this system (`linux`, `win`, `osx`).
    pub fn github_os(self) -> &'static str {
        match self {
            Self::Linux => "linux",
            Self::Windows => "win",
            Self::Osx => "osx",
        }
    }
}

impl OsArch {
    /// Every value, in the order problems list them.
    pub const ALL: [Self; 4] = [Self::Amd64, Self::Arm64, Self::Arm, Self::I386];

    /// GARM's spelling (`amd64`, `arm64`, `arm`, `386`), as stored and written at every door.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Amd64 => "amd64",
            Self::Arm64 => "arm64",
            Self::Arm => "arm",
            Self::I386 => "386",
        }
    }

    /// The value GARM spells `text`, if any.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// The `architecture` of GitHub's runner download for this architecture (`x64`, `arm64`,
    /// `arm`, `x86`), as garm-provider-common maps it.
    pub fn github_architecture(self) -> &'static str {
        match self {
            Self::Amd64 => "x64",
            Self::Arm64 => "arm64",
            Self::Arm => "arm",
            Self::I386 => "x86",
        }
    }
}

impl fmt::Display for OsType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for OsArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_reads_back_from_its_spelling() {
        for v in OsType::ALL {
            assert_eq!(OsType::parse(v.as_str()), Some(v));
        }
        for v in OsArch::ALL {
            assert_eq!(OsArch::parse(v.as_str()), Some(v));
        }
        assert_eq!(OsType::parse("macos"), None);
        assert_eq!(OsArch::parse("x64"), None);
    }
}
