//! Precedence (flag, then environment, then file), the default file location, and the
//! errors a person sees for a bad file, URL, token or duration.

use super::*;

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn flag_beats_environment_beats_file() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "scaleset/ctl.toml",
        "url = \"http://file:1\"\ntoken = \"sst_file\"\ntimeout = \"5s\"\n",
    );
    let xdg = dir.path().to_str().unwrap();
    let only_file =
        Settings::resolve(&Flags::default(), &env(&[("XDG_CONFIG_HOME", xdg)])).unwrap();
    assert_eq!(only_file.url.as_str(), "http://file:1/");
    assert_eq!(only_file.token, Some(Token::new("sst_file")));
    assert_eq!(only_file.timeout, Duration::from_secs(5));
    assert!(only_file.token_source.unwrap().contains("token in"));

    let env_too = env(&[
        ("XDG_CONFIG_HOME", xdg),
        ("SCALESET_URL", "http://env:2"),
        ("SCALESET_TOKEN", "sst_env"),
    ]);
    let from_env = Settings::resolve(&Flags::default(), &env_too).unwrap();
    assert_eq!(from_env.url.as_str(), "http://env:2/");
    assert_eq!(from_env.token, Some(Token::new("sst_env")));
    assert_eq!(from_env.token_source.as_deref(), Some("SCALESET_TOKEN"));

    let flags = Flags {
        url: Some("https://flag:3".into()),
        token: Some(Token::new("sst_flag")),
        ..Flags::default()
    };
    let from_flags = Settings::resolve(&flags, &env_too).unwrap();
    assert_eq!(from_flags.url.as_str(), "https://flag:3/");
    assert_eq!(from_flags.token, Some(Token::new("sst_flag")));
}

#[test]
fn token_file_relative_to_the_config_file_and_trimmed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "conf/token", "sst_abc\n");
    let config = write(dir.path(), "conf/ctl.toml", "token_file = \"token\"\n");
    let flags = Flags {
        config: Some(config),
        ..Flags::default()
    };
    let settings = Settings::resolve(&flags, &env(&[])).unwrap();
    assert_eq!(settings.token.unwrap().expose(), "sst_abc");
}

#[test]
fn defaults_without_any_source() {
    let settings = Settings::resolve(&Flags::default(), &env(&[])).unwrap();
    assert_eq!(settings.url.as_str(), "http://127.0.0.1:8080/");
    assert!(settings.token.is_none());
    assert_eq!(settings.timeout, DEFAULT_TIMEOUT);
    assert!(settings.config_file.is_none());
}

#[test]
fn default_path_is_xdg_then_home() {
    assert_eq!(
        default_config_path(&env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])),
        Some(PathBuf::from("/x/scaleset/ctl.toml"))
    );
    // A relative XDG_CONFIG_HOME is invalid by the spec and ignored.
    assert_eq!(
        default_config_path(&env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")])),
        Some(PathBuf::from("/h/.config/scaleset/ctl.toml"))
    );
    assert_eq!(default_config_path(&env(&[])), None);
}

#[test]
fn a_named_config_file_must_exist_and_be_valid() {
    let dir = tempfile::tempdir().unwrap();
    let missing = Flags {
        config: Some(dir.path().join("nope.toml")),
        ..Flags::default()
    };
    let e = format!("{:#}", Settings::resolve(&missing, &env(&[])).unwrap_err());
    assert!(e.contains("cannot read the configuration file"), "{e}");

    let bad = write(dir.path(), "bad.toml", "url = \"http://x\"\ntokn = \"x\"\n");
    let e = format!(
        "{:#}",
        Settings::resolve(
            &Flags {
                config: Some(bad),
                ..Flags::default()
            },
            &env(&[])
        )
        .unwrap_err()
    );
    assert!(
        e.contains("bad.toml is invalid") && e.contains("tokn"),
        "{e}"
    );
}

#[test]
fn bad_values_name_their_source() {
    let e = |pairs: &[(&str, &str)]| {
        format!(
            "{:#}",
            Settings::resolve(&Flags::default(), &env(pairs)).unwrap_err()
        )
    };
    let url = e(&[("SCALESET_URL", "ftp://x")]);
    assert!(
        url.contains("SCALESET_URL") && url.contains("http:// or https://"),
        "{url}"
    );
    let token = e(&[("SCALESET_TOKEN", "a b")]);
    assert!(
        token.contains("SCALESET_TOKEN") && token.contains("whitespace"),
        "{token}"
    );
    let empty = e(&[("SCALESET_TOKEN", "  ")]);
    assert!(empty.contains("empty"), "{empty}");
    let timeout = e(&[("SCALESET_TIMEOUT", "soon")]);
    assert!(
        timeout.contains("SCALESET_TIMEOUT") && timeout.contains("duration"),
        "{timeout}"
    );
}

#[test]
fn durations() {
    assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
    assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
    assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
    assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(parse_duration("7"), Some(Duration::from_secs(7)));
    assert_eq!(parse_duration("0s"), None);
    assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
    assert_eq!(parse_duration("7d"), Some(Duration::from_secs(7 * 86_400)));
    assert_eq!(parse_duration(""), None);
    assert_eq!(parse_duration("99999999999999999999h"), None);
}

#[test]
fn token_debug_is_redacted() {
    assert_eq!(
        format!("{:?}", Token::new("sst_secret")),
        "Token([redacted])"
    );
}
