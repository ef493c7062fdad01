//! The diesel table definitions, matching `migrations/*/up.sql` (the same for both backends).

diesel::table! {
    controller (singleton) {
        singleton -> Integer,
        controller_id -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    credentials (id) {
        id -> Text,
        name -> Text,
        kind -> Text,
        app_id -> Nullable<BigInt>,
        client_id -> Nullable<Text>,
        installation_id -> Nullable<BigInt>,
        secret_key_id -> Text,
        secret_ciphertext -> Binary,
        base_url -> Text,
        api_base_url -> Text,
        ca_bundle -> Nullable<Text>,
        system_trust -> Bool,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    entities (id) {
        id -> Text,
        credentials_id -> Text,
        kind -> Text,
        path -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    scale_sets (id) {
        id -> Text,
        entity_id -> Text,
        name -> Text,
        runner_group_name -> Text,
        runner_group_id -> Nullable<BigInt>,
        labels -> Text,
        disable_update -> Bool,
        provider -> Text,
        image -> Text,
        flavor -> Text,
        min_idle -> BigInt,
        max_runners -> BigInt,
        bootstrap_timeout_secs -> BigInt,
        runner_prefix -> Text,
        extra_specs -> Text,
        enabled -> Bool,
        adoption_policy -> Text,
        repair -> Bool,
        github_id -> Nullable<BigInt>,
        provenance -> Nullable<Text>,
        evidence -> Text,
        state -> Text,
        state_reason -> Text,
        last_message_id -> BigInt,
        session_id -> Nullable<Text>,
        desired_runners -> BigInt,
        generation -> BigInt,
        created_at -> BigInt,
        updated_at -> BigInt,
        last_message_at -> Nullable<BigInt>,
        jobs_waiting -> BigInt,
        refusal -> Nullable<Text>,
        scale_down_delay_secs -> BigInt,
        max_idle_lifetime_secs -> BigInt,
        max_lifetime_secs -> BigInt,
        takeover -> Nullable<Text>,
        os_type -> Text,
        os_arch -> Text,
        runner_setup -> Text,
        revision -> BigInt,
    }
}

diesel::table! {
    scale_set_health (scale_set_id) {
        scale_set_id -> Text,
        jobs_waiting_since -> Nullable<BigInt>,
        provider_error -> Nullable<Text>,
        provider_error_at -> Nullable<BigInt>,
        retry_requested_at -> Nullable<BigInt>,
        revision -> BigInt,
    }
}

diesel::table! {
    scale_set_watch (singleton) {
        singleton -> Integer,
        incarnation -> Text,
        deletions -> BigInt,
    }
}

diesel::table! {
    scale_set_samples (scale_set_id, at) {
        scale_set_id -> Text,
        at -> BigInt,
        jobs_waiting -> BigInt,
        idle -> BigInt,
        busy -> BigInt,
        starting -> BigInt,
        start_latency_ms -> Nullable<BigInt>,
    }
}

diesel::table! {
    instances (name) {
        name -> Text,
        scale_set_id -> Text,
        provider_id -> Nullable<Text>,
        github_runner_id -> Nullable<BigInt>,
        pool_key -> Text,
        status -> Text,
        bootstrap_deadline -> Nullable<BigInt>,
        created_at -> BigInt,
        updated_at -> BigInt,
        removal_requested_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    leases (scale_set_id) {
        scale_set_id -> Text,
        holder -> Text,
        token -> BigInt,
        expires_at -> BigInt,
        acquired_at -> BigInt,
    }
}

diesel::table! {
    events (id) {
        id -> BigInt,
        scale_set_id -> Text,
        kind -> Text,
        code -> Text,
        reason -> Text,
        at -> BigInt,
        count -> BigInt,
        last_at -> BigInt,
    }
}

diesel::table! {
    api_tokens (id) {
        id -> Text,
        name -> Text,
        token_hash -> Binary,
        created_at -> BigInt,
        scope -> Text,
    }
}

diesel::joinable!(entities -> credentials (credentials_id));
diesel::joinable!(scale_sets -> entities (entity_id));
diesel::joinable!(instances -> scale_sets (scale_set_id));
diesel::table! {
    workers (name) {
        name -> Text,
        expires_at -> BigInt,
        heartbeat_at -> BigInt,
        draining -> Bool,
    }
}

diesel::table! {
    instance_access (instance_name) {
        instance_name -> Text,
        token_hash -> Binary,
        expires_at -> BigInt,
        jit_key_id -> Text,
        jit_ciphertext -> Binary,
        bootstrap_status -> Text,
        status_message -> Nullable<Text>,
        agent_id -> Nullable<BigInt>,
        os_name -> Nullable<Text>,
        os_version -> Nullable<Text>,
        updated_at -> BigInt,
    }
}

diesel::table! {
    instance_jobs (instance_name) {
        instance_name -> Text,
        repository -> Nullable<Text>,
        workflow -> Nullable<Text>,
        started_at -> BigInt,
    }
}

diesel::table! {
    runner_downloads (entity_id) {
        entity_id -> Text,
        downloads -> Nullable<Text>,
        read_at -> Nullable<BigInt>,
        failure -> Nullable<Text>,
        failed_at -> Nullable<BigInt>,
    }
}

diesel::joinable!(runner_downloads -> entities (entity_id));
diesel::joinable!(instance_access -> instances (instance_name));
diesel::joinable!(instance_jobs -> instances (instance_name));
diesel::joinable!(leases -> scale_sets (scale_set_id));
diesel::joinable!(events -> scale_sets (scale_set_id));
diesel::joinable!(scale_set_samples -> scale_sets (scale_set_id));
diesel::joinable!(scale_set_health -> scale_sets (scale_set_id));

diesel::allow_tables_to_appear_in_same_query!(
    controller,
    credentials,
    entities,
    runner_downloads,
    scale_sets,
    scale_set_samples,
    scale_set_health,
    instances,
    instance_access,
    instance_jobs,
    leases,
    workers,
    events,
    api_tokens,
);
