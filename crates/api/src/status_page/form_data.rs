//! The fields of a form POST, as a browser sends them without any script: URL-encoded
//! (`application/x-www-form-urlencoded`, every form of the page) or `multipart/form-data`
//! (the fleet page, whose file input uploads the fleet file). Only text fields and the text of
//! uploaded files are kept; a body that is neither, or malformed, is refused with the reason,
//! never a panic (it is whatever a client sent).

use std::collections::HashMap;

/// A form's fields by name (the last value of a repeated name wins).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Fields(HashMap<String, String>);

impl Fields {
    /// The value of `name`, `""` when absent.
    pub(super) fn get(&self, name: &str) -> &str {
        self.0.get(name).map_or("", String::as_str)
    }

    /// Whether a checkbox named `name` was ticked (sent at all, with any value but `false`).
    pub(super) fn checked(&self, name: &str) -> bool {
        self.0.get(name).is_some_and(|v| v != "false")
    }
}

/// Why a body is not a form this page reads.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum FormError {
    /// Neither content type.
    #[error(
        "the form was sent as {0:?}; send it as application/x-www-form-urlencoded or multipart/form-data"
    )]
    ContentType(String),
    /// A multipart body without a boundary, or parts that do not follow it.
    #[error("the multipart form is malformed: {0}")]
    Multipart(&'static str),
    /// An uploaded file that is not UTF-8 text.
    #[error("the uploaded file {0:?} is not UTF-8 text (a fleet file is TOML)")]
    NotText(String),
}

/// The fields of `body`, sent with `content_type`.
pub(super) fn parse(content_type: Option<&str>, body: &[u8]) -> Result<Fields, FormError> {
    let content_type = content_type.unwrap_or("application/x-www-form-urlencoded");
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "application/x-www-form-urlencoded" => Ok(Fields(
            url::form_urlencoded::parse(body)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )),
        "multipart/form-data" => {
            let boundary = parameter(content_type, "boundary")
                .ok_or(FormError::Multipart("no boundary in the content type"))?;
            multipart(body, &boundary)
        }
        _ => Err(FormError::ContentType(content_type.to_owned())),
    }
}

/// The value of `name=` among the `;`-separated parameters of a header value, unquoted.
fn parameter(value: &str, name: &str) -> Option<String> {
    value.split(';').skip(1).find_map(|p| {
        let (key, v) = p.trim().split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().trim_matches('"').to_owned())
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// RFC 7578: parts between `--boundary` lines, each with headers, a blank line and content.
fn multipart(body: &[u8], boundary: &str) -> Result<Fields, FormError> {
    if boundary.is_empty() || boundary.len() > 200 {
        return Err(FormError::Multipart("the boundary is empty or too long"));
    }
    let delimiter = format!("--{boundary}");
    let start = find(body, delimiter.as_bytes()).ok_or(FormError::Multipart(
        "the body does not start with the boundary",
    ))?;
    let mut rest = &body[start + delimiter.len()..];
    let next = format!("\r\n--{boundary}");
    let mut fields = HashMap::new();
    loop {
        if rest.starts_with(b"--") {
            return Ok(Fields(fields));
        }
        rest = rest
            .strip_prefix(b"\r\n")
            .ok_or(FormError::Multipart("a boundary line does not end in CRLF"))?;
        let end = find(rest, next.as_bytes())
            .ok_or(FormError::Multipart("a part is not closed by the boundary"))?;
        let part = &rest[..end];
        rest = &rest[end + next.len()..];
        let split = find(part, b"\r\n\r\n").ok_or(FormError::Multipart(
            "a part has no blank line after its headers",
        ))?;
        let headers = String::from_utf8_lossy(&part[..split]);
        let content = &part[split + 4..];
        let disposition = headers
            .split("\r\n")
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.trim()
                    .eq_ignore_ascii_case("content-disposition")
                    .then_some(value)
            })
            .ok_or(FormError::Multipart("a part has no Content-Disposition"))?;
        let Some(name) = parameter(disposition, "name") else {
            continue;
        };
        let text = match std::str::from_utf8(content) {
            Ok(text) => text.to_owned(),
            Err(_) => {
                return Err(FormError::NotText(
                    parameter(disposition, "filename").unwrap_or(name),
                ));
            }
        };
        fields.insert(name, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_encoded_fields_are_read() {
        let fields = parse(
            Some("application/x-www-form-urlencoded"),
            b"csrf=a%2Bb&max_runners=7&prune=on",
        )
        .unwrap();
        assert_eq!(fields.get("csrf"), "a+b");
        assert_eq!(fields.get("max_runners"), "7");
        assert!(fields.checked("prune"));
        assert!(!fields.checked("force"));
        assert_eq!(fields.get("absent"), "");
    }

    #[test]
    fn a_multipart_upload_gives_the_file_text_and_the_other_fields() {
        let body = "--XyZ\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\ntok\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"fleet.toml\"\r\n\
                    Content-Type: application/toml\r\n\r\n[[scale_set]]\r\nname = \"a\"\r\n\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=\"fleet\"\r\n\r\n\r\n--XyZ--\r\n";
        let fields = parse(Some("multipart/form-data; boundary=XyZ"), body.as_bytes()).unwrap();
        assert_eq!(fields.get("csrf"), "tok");
        assert_eq!(fields.get("file"), "[[scale_set]]\r\nname = \"a\"\r\n");
        assert_eq!(fields.get("fleet"), "");
    }

    #[test]
    fn malformed_bodies_are_refused_without_panicking() {
        let multipart = Some("multipart/form-data; boundary=b");
        for body in [
            &b""[..],
            b"--b",
            b"--b\r\n",
            b"--b\r\nContent-Disposition: form-data; name=x\r\n",
            b"--b\r\nno blank line\r\n--b--",
            b"--bX",
        ] {
            assert!(parse(multipart, body).is_err(), "{body:?}");
        }
        assert!(parse(Some("multipart/form-data"), b"--b--").is_err());
        assert!(parse(Some("application/json"), b"{}").is_err());
        let binary = b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.bin\"\r\n\r\n\xff\xfe\r\n--b--";
        assert_eq!(
            parse(multipart, binary),
            Err(FormError::NotText("x.bin".to_owned()))
        );
    }
}
