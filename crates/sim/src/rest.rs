//! The GitHub REST endpoints: installation and registration tokens, runner-registration, the
//! runner application downloads (and their archives), `rate_limit`, and the REST rate-limit
//! answers the `restRateLimit` fault gives.

use http::header::{AUTHORIZATION, RETRY_AFTER};
use serde_json::{Value, json};

use crate::app_auth::{self, JwtRefusal, KnownApp};
use crate::auth::runner_admin_scope;
use crate::clock::SimTime;
use crate::exception::ApiError;
use crate::fault::{RestRateLimitAnswer, take_count};
use crate::protocol;
use crate::quota::QuotaStatus;
use crate::request::{Outcome, Reply, Request};
use crate::scope::Scope;
use crate::simulator::{Shared, lock};
use crate::token::Grant;

/// Response headers added to an answer.
pub(crate) type ExtraHeaders = Vec<(&'static str, String)>;

fn random_token(prefix: &str, len: usize) -> String {
    let alphabet: Vec<char> = ('A'..='Z').chain('0'..='9').collect();
    let tail: String = (0..len)
        .map(|_| alphabet[fastrand::usize(..alphabet.len())])
        .collect();
    format!("{prefix}{tail}")
}

/// `POST /app/installations/{id}/access_tokens`: the App JWT is checked as GitHub checks it
/// (see [`crate::app_auth`]: 401 with GitHub's message for a bad signature, an expired or
/// future token, an unknown App), then the installation (404 when the simulator has none with
/// this id, as GitHub answers; 401 `Integration not found` when it belongs to another App).
pub(crate) fn installation_token(shared: &Shared, req: &Request, id: i64) -> Outcome {
    let refused = |refusal: JwtRefusal| ApiError::Rest {
        status: 401,
        message: refusal.message(),
    };
    let token = req.bearer().ok_or(refused(JwtRefusal::Undecodable))?;
    let config = &shared.config;
    // Registered Apps, then Apps known only by an installation naming them (no key).
    let mut apps: Vec<KnownApp<'_>> = config
        .apps
        .iter()
        .map(|a| KnownApp {
            ids: [Some(a.id.as_str()), a.client_id.as_deref()],
            key: Some(&a.public_key),
        })
        .collect();
    apps.extend(
        config
            .installations
            .iter()
            .filter(|i| {
                !config
                    .apps
                    .iter()
                    .any(|a| a.id == i.app_id || a.client_id.as_deref() == Some(&i.app_id))
            })
            .map(|i| KnownApp {
                ids: [Some(i.app_id.as_str()), None],
                key: None,
            }),
    );
    let issuer = app_auth::check(token, &apps, shared.clock.wall().as_secs()).map_err(refused)?;
    let seed = config
        .installations
        .iter()
        .find(|i| i.id == id)
        .ok_or_else(ApiError::rest_not_found)?;
    let same_app = seed.app_id == issuer
        || config.apps.iter().any(|a| {
            (a.id == seed.app_id || a.client_id.as_deref() == Some(&seed.app_id))
                && (a.id == issuer || a.client_id.as_deref() == Some(&issuer))
        });
    if !same_app {
        return Err(refused(JwtRefusal::UnknownApp));
    }
    let now = shared.clock.now();
    let token = random_token("ghs_", 36);
    let expires = now.plus(shared.config.installation_token_ttl);
    lock(&shared.state)
        .installation_tokens
        .insert(token.clone(), (id, expires));
    Ok(Reply::json(
        201,
        json!({
            "token": token,
            "expires_at": protocol::expires_at(expires),
            "permissions": { "organization_self_hosted_runners": "write", "administration": "write", "metadata": "read" },
            "repository_selection": "all",
        }),
    ))
}

pub(crate) fn registration_token(shared: &Shared, req: &Request, path: &str) -> Outcome {
    let scope = runner_admin_scope(shared, req, path)?;
    let now = shared.clock.now();
    let token = random_token("AREG", 29);
    let expires = now.plus(shared.config.registration_token_ttl);
    lock(&shared.state)
        .registration_tokens
        .insert(token.clone(), (scope, expires));
    Ok(Reply::json(
        201,
        json!({ "token": token, "expires_at": protocol::expires_at(expires) }),
    ))
}

/// `GET …/actions/runners/downloads`: the runner application of every usual platform, served
/// by the simulator itself.
pub(crate) fn runner_downloads(shared: &Shared, req: &Request, path: &str) -> Outcome {
    runner_admin_scope(shared, req, path)?;
    let faults = lock(&shared.faults).clone();
    let archives: Vec<_> = if faults.empty_runner_downloads {
        Vec::new()
    } else {
        shared
            .downloads
            .archives()
            .iter()
            .filter(|a| {
                let platform = format!("{}/{}", a.os, a.architecture);
                !faults.omit_runner_downloads.contains(&platform)
            })
            .cloned()
            .collect()
    };
    Ok(Reply::json(
        200,
        protocol::runner_downloads(&archives, &req.origin),
    ))
}

/// `GET {orgs/{o}|enterprises/{e}}/actions/runner-groups[?per_page=&page=]`: the scope's runner
/// groups in GitHub's REST shape, paged as GitHub pages (`per_page` 30 by default, at most 100;
/// a `Link` header with `next`/`last` and `first`/`prev` where they exist). GARM resolves every
/// group but `Default` this way (shared/reference/garm).
pub(crate) fn runner_groups(shared: &Shared, req: &Request, path: &str) -> Outcome {
    let scope = runner_admin_scope(shared, req, path)?;
    let groups = lock(&shared.state).groups(&scope, None);
    let page = Page::of(req.query("per_page"), req.query("page"));
    let api = format!("{}/api/v3", req.origin);
    let (scope_url, enterprise) = match &scope {
        Scope::Enterprise(slug) => (format!("{api}/enterprises/{slug}"), true),
        _ => (format!("{api}/orgs/{path}"), false),
    };
    let listed: Vec<Value> = groups
        .iter()
        .skip(page.skip())
        .take(page.per_page)
        .map(|g| protocol::rest_runner_group(g, &scope_url, enterprise))
        .collect();
    let reply = Reply::json(
        200,
        json!({ "total_count": groups.len(), "runner_groups": listed }),
    );
    let list_url = format!("{scope_url}/actions/runner-groups");
    Ok(match page.link(&list_url, groups.len()) {
        Some(link) => reply.with_header("link", link),
        None => reply,
    })
}

/// One page of a REST list, as `per_page` and `page` ask (GitHub's defaults for what is missing
/// or not a positive number: the tolerant reading, as GitHub ignores a bad value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Page {
    per_page: usize,
    page: usize,
}

impl Page {
    const DEFAULT_PER_PAGE: usize = 30;
    const MAX_PER_PAGE: usize = 100;

    fn of(per_page: Option<&str>, page: Option<&str>) -> Self {
        let positive =
            |raw: Option<&str>| raw.and_then(|r| r.parse::<usize>().ok()).filter(|n| *n > 0);
        Self {
            per_page: positive(per_page)
                .unwrap_or(Self::DEFAULT_PER_PAGE)
                .min(Self::MAX_PER_PAGE),
            page: positive(page).unwrap_or(1),
        }
    }

    fn skip(self) -> usize {
        (self.page - 1).saturating_mul(self.per_page)
    }

    /// GitHub's `Link` header for this page of `total` items, `None` when one page holds them.
    fn link(self, url: &str, total: usize) -> Option<String> {
        let last = total.div_ceil(self.per_page).max(1);
        if last == 1 {
            return None;
        }
        let at = |page: usize| format!("<{url}?per_page={}&page={page}>", self.per_page);
        let mut rels = Vec::new();
        if self.page < last {
            rels.push(format!("{}; rel=\"next\"", at(self.page + 1)));
            rels.push(format!("{}; rel=\"last\"", at(last)));
        }
        if self.page > 1 {
            rels.push(format!("{}; rel=\"prev\"", at(self.page.min(last + 1) - 1)));
            rels.push(format!("{}; rel=\"first\"", at(1)));
        }
        Some(rels.join(", "))
    }
}

/// `GET /rate_limit`: the simulated `core` quota (exhausted while `restRateLimit` is armed).
/// Unauthenticated calls are answered too, as GitHub does; an unknown token is refused.
pub(crate) fn rate_limit(shared: &Shared, req: &Request) -> Outcome {
    let now = shared.clock.now();
    if req.headers.contains_key(AUTHORIZATION) {
        let token = req.rest_token().ok_or_else(ApiError::bad_credentials)?;
        let known = lock(&shared.pats).presented(token).is_some()
            || lock(&shared.state)
                .installation_tokens
                .get(token)
                .is_some_and(|(_, expires)| *expires > now);
        if !known {
            return Err(ApiError::bad_credentials());
        }
    }
    let exhausted = lock(&shared.faults)
        .rest_rate_limit
        .as_ref()
        .filter(|f| f.armed())
        .map(|f| QuotaStatus::exhausted(now.as_secs().saturating_add(f.wait_secs)));
    let quota = exhausted.unwrap_or_else(|| lock(&shared.quota).status(now));
    Ok(Reply::json(200, protocol::rate_limit(&quota, now)))
}

pub(crate) fn runner_registration(shared: &Shared, req: &Request) -> Outcome {
    if take_count(&mut lock(&shared.faults).runner_registration_unauthorized) {
        return Err(ApiError::bad_credentials());
    }
    let token = req
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("RemoteAuth"))
        .map(|(_, t)| t.trim().to_owned())
        .ok_or_else(ApiError::bad_credentials)?;
    let now = shared.clock.now();
    let (scope, expires) = lock(&shared.state)
        .registration_tokens
        .get(&token)
        .cloned()
        .ok_or_else(ApiError::bad_credentials)?;
    if expires <= now {
        return Err(ApiError::bad_credentials());
    }
    let body = req.json();
    let wanted = protocol::field(&body, "url")
        .and_then(Value::as_str)
        .and_then(Scope::parse_url)
        .ok_or(ApiError::Rest {
            status: 400,
            message: "Invalid request: 'url' must be a GitHub URL of a repository, organization or enterprise",
        })?;
    if wanted != scope {
        return Err(ApiError::Rest {
            status: 403,
            message: "The registration token does not grant access to this URL",
        });
    }
    let admin = shared.signer.mint(
        Grant::Admin {
            scope: scope.to_string(),
        },
        now,
        shared.config.admin_token_ttl,
    );
    Ok(Reply::json(
        200,
        json!({
            "url": format!("{}{}", req.origin, shared.mounts.actions_base),
            "token": admin,
            "token_schema": "OAuthAccessToken",
        }),
    ))
}

/// `GET /actions/runner/releases/download/{tag}/{filename}`: a runner archive.
pub(crate) fn runner_archive(shared: &Shared, tag: &str, filename: &str) -> Outcome {
    shared
        .downloads
        .find(tag, filename)
        .map(|a| Reply::bytes(200, "application/octet-stream", a.bytes.clone()))
        .ok_or(ApiError::RouterNotFound)
}

/// One of GitHub's REST rate-limit answers, telling the client to wait `wait` seconds.
pub(crate) fn rate_limited(
    answer: RestRateLimitAnswer,
    wait: u64,
    now: SimTime,
) -> (Outcome, ExtraHeaders) {
    const SECONDARY: &str =
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.";
    match answer {
        RestRateLimitAnswer::RetryAfter403 | RestRateLimitAnswer::RetryAfter429 => {
            let status = if answer == RestRateLimitAnswer::RetryAfter403 {
                403
            } else {
                429
            };
            (
                Err(ApiError::Rest {
                    status,
                    message: SECONDARY,
                }),
                vec![(RETRY_AFTER.as_str(), wait.to_string())],
            )
        }
        RestRateLimitAnswer::RemainingZero403 => {
            let quota = QuotaStatus::exhausted(now.as_secs().saturating_add(wait));
            (
                Err(ApiError::Rest {
                    status: 403,
                    message: "API rate limit exceeded for user ID 1.",
                }),
                protocol::rate_limit_headers(&quota),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Page;

    #[test]
    fn a_page_takes_githubs_defaults_for_what_is_missing_or_bad() {
        assert_eq!(
            Page::of(None, None),
            Page {
                per_page: 30,
                page: 1
            }
        );
        assert_eq!(
            Page::of(Some("0"), Some("-1")),
            Page {
                per_page: 30,
                page: 1
            }
        );
        assert_eq!(
            Page::of(Some("x"), Some("2")),
            Page {
                per_page: 30,
                page: 2
            }
        );
        assert_eq!(
            Page::of(Some("500"), None),
            Page {
                per_page: 100,
                page: 1
            }
        );
        assert_eq!(Page::of(Some("7"), Some("3")).skip(), 14);
    }

    #[test]
    fn the_link_header_names_the_neighbouring_and_end_pages() {
        let url = "http://h/l";
        let page = |per_page, page| Page { per_page, page };
        assert_eq!(page(30, 1).link(url, 30), None);
        assert_eq!(page(30, 1).link(url, 0), None);
        assert_eq!(
            page(10, 2).link(url, 31).as_deref(),
            Some(
                "<http://h/l?per_page=10&page=3>; rel=\"next\", <http://h/l?per_page=10&page=4>; rel=\"last\", \
                 <http://h/l?per_page=10&page=1>; rel=\"prev\", <http://h/l?per_page=10&page=1>; rel=\"first\""
            )
        );
        // Past the end: only the way back.
        assert_eq!(
            page(10, 9).link(url, 20).as_deref(),
            Some(
                "<http://h/l?per_page=10&page=2>; rel=\"prev\", <http://h/l?per_page=10&page=1>; rel=\"first\""
            )
        );
    }
}
