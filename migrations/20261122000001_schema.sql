-- The whole domain of the employment eligibility records service.
-- Social security numbers and partner signing secrets are stored only encrypted
-- (AES-256-GCM, key from configuration); SSNs also carry a keyed HMAC-SHA256
-- for exact-match search. Passwords and client secrets are argon2id hashes;
-- tokens are stored as SHA-256 hashes only.

CREATE TABLE legal_entities (
    id                    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    seed_key              TEXT UNIQUE,
    entity_name           TEXT NOT NULL CHECK (length(entity_name) BETWEEN 1 AND 200),
    ein                   TEXT NOT NULL DEFAULT '' CHECK (ein = '' OR ein ~ '^[0-9]{2}-[0-9]{7}$'),
    everify_id            TEXT CHECK (everify_id ~ '^[0-9]+$'),
    everify_effective_date DATE,
    everify_status        TEXT NOT NULL DEFAULT 'Not Ready',
    active                BOOLEAN NOT NULL DEFAULT TRUE,
    created_at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at            TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- The organization hierarchy. An employee's locationId is a group id.
CREATE TABLE groups (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    parent_id  BIGINT REFERENCES groups (id) ON DELETE RESTRICT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (parent_id IS DISTINCT FROM id)
);
CREATE UNIQUE INDEX groups_name_key ON groups (lower(name));
CREATE INDEX groups_parent_idx ON groups (parent_id);

CREATE TABLE permissions (
    id   SMALLINT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
INSERT INTO permissions (id, name) VALUES
    (1, 'view employees'),
    (2, 'create and update employees'),
    (3, 'view I-9s'),
    (4, 'work on I-9s'),
    (5, 'approve I-9s'),
    (6, 'view legal entities'),
    (7, 'view groups and the users of a group'),
    (8, 'view users'),
    (9, 'view roles'),
    (10, 'the integrated partner operation'),
    (11, 'see employees of every group'),
    (12, 'see full social security numbers');

CREATE TABLE roles (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    description TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX roles_name_key ON roles (lower(name));

CREATE TABLE role_permissions (
    role_id       BIGINT NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
    permission_id SMALLINT NOT NULL REFERENCES permissions (id),
    PRIMARY KEY (role_id, permission_id)
);

CREATE TABLE employees (
    id                          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    first_name                  TEXT NOT NULL CHECK (length(first_name) BETWEEN 1 AND 40),
    last_name                   TEXT NOT NULL CHECK (length(last_name) BETWEEN 1 AND 40),
    middle_name                 TEXT CHECK (length(middle_name) <= 25),
    ssn_ciphertext              BYTEA,
    ssn_hash                    BYTEA,
    ssn_last4                   TEXT CHECK (ssn_last4 ~ '^[0-9]{4}$'),
    date_of_birth               DATE,
    profile_id                  TEXT CHECK (length(profile_id) BETWEEN 1 AND 30),
    other_name                  TEXT CHECK (length(other_name) <= 40),
    job_title                   TEXT CHECK (length(job_title) <= 80),
    email_address               TEXT CHECK (length(email_address) <= 80),
    location_id                 BIGINT NOT NULL REFERENCES groups (id),
    legal_entity_id             BIGINT REFERENCES legal_entities (id),
    language_preference         SMALLINT CHECK (language_preference IN (1, 2)),
    custom1                     TEXT CHECK (length(custom1) <= 255),
    custom2                     TEXT CHECK (length(custom2) <= 255),
    custom3                     TEXT CHECK (length(custom3) <= 255),
    custom4                     TEXT CHECK (length(custom4) <= 255),
    custom5                     TEXT CHECK (length(custom5) <= 255),
    custom6                     TEXT CHECK (length(custom6) <= 255),
    custom7                     TEXT CHECK (length(custom7) <= 255),
    custom8                     TEXT CHECK (length(custom8) <= 255),
    notification_email1         TEXT CHECK (length(notification_email1) <= 255),
    notification_email2         TEXT CHECK (length(notification_email2) <= 255),
    address_street              TEXT CHECK (length(address_street) <= 80),
    address_street2             TEXT CHECK (length(address_street2) <= 80),
    address_apartment           TEXT CHECK (length(address_apartment) <= 80),
    address_city                TEXT CHECK (length(address_city) <= 50),
    address_state               TEXT CHECK (length(address_state) <= 20),
    address_country             TEXT CHECK (length(address_country) <= 50),
    address_zip                 TEXT CHECK (length(address_zip) <= 10),
    work_number                 TEXT CHECK (length(work_number) <= 20),
    work_extension              TEXT CHECK (length(work_extension) <= 10),
    home_number                 TEXT CHECK (length(home_number) <= 20),
    home_extension              TEXT CHECK (length(home_extension) <= 10),
    cell_number                 TEXT CHECK (length(cell_number) <= 20),
    cell_extension              TEXT CHECK (length(cell_extension) <= 10),
    -- Partner integration (set by POST /v1/partners/i9s/section1).
    integration_client_id       BIGINT,
    integration_client_system   TEXT,
    integration_client_process  TEXT,
    integration_hr_url          TEXT,
    integration_transaction_id  TEXT,
    integration_request_id      TEXT,
    integration_candidate_id    TEXT CHECK (length(integration_candidate_id) <= 50),
    integration_service_id      TEXT,
    integration_report_url      TEXT,
    employee_return_url         TEXT CHECK (length(employee_return_url) <= 255),
    -- Per-employee sequence of partner status events.
    event_sequence              BIGINT NOT NULL DEFAULT 0,
    created_at                  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at                  TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((ssn_ciphertext IS NULL) = (ssn_hash IS NULL) AND (ssn_hash IS NULL) = (ssn_last4 IS NULL))
);
CREATE UNIQUE INDEX employees_profile_id_key ON employees (lower(profile_id));
CREATE UNIQUE INDEX employees_ssn_hash_key ON employees (ssn_hash);
CREATE INDEX employees_location_idx ON employees (location_id);
CREATE INDEX employees_last_name_idx ON employees (lower(last_name));
CREATE INDEX employees_first_name_idx ON employees (lower(first_name));
CREATE INDEX employees_email_idx ON employees (lower(email_address));

-- Periods of employment: the current one is the latest (highest id).
CREATE TABLE employment_periods (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    employee_id    BIGINT NOT NULL REFERENCES employees (id) ON DELETE RESTRICT,
    start_date     DATE,
    terminated_date DATE,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (terminated_date IS NULL OR start_date IS NULL OR terminated_date >= start_date)
);
CREATE INDEX employment_periods_employee_idx ON employment_periods (employee_id, id DESC);

CREATE TABLE users (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    login           TEXT NOT NULL CHECK (length(login) BETWEEN 1 AND 100),
    password_hash   TEXT,
    first_name      TEXT NOT NULL,
    last_name       TEXT NOT NULL,
    middle_name     TEXT,
    title           TEXT,
    email_address   TEXT,
    retired         BOOLEAN NOT NULL DEFAULT FALSE,
    role_id         BIGINT NOT NULL REFERENCES roles (id),
    profile_id      TEXT,
    saml_id         TEXT,
    oauth_id        TEXT,
    work_number     TEXT,
    work_extension  TEXT,
    home_number     TEXT,
    home_extension  TEXT,
    cell_number     TEXT,
    cell_extension  TEXT,
    -- Set for the sign-in of an employee (createLogin).
    employee_id     BIGINT UNIQUE REFERENCES employees (id),
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_login_key ON users (lower(login));
CREATE INDEX users_full_name_idx ON users (last_name, first_name, id);

CREATE TABLE user_groups (
    user_id  BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    group_id BIGINT NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, group_id)
);
CREATE INDEX user_groups_group_idx ON user_groups (group_id);

-- One-time links an employee uses to set a password (createLogin + sendLoginEmail).
CREATE TABLE password_set_tokens (
    token_hash  BYTEA PRIMARY KEY,
    user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at  TIMESTAMPTZ NOT NULL,
    used_at     TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE oauth_clients (
    id                         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    client_id                  TEXT NOT NULL UNIQUE CHECK (length(client_id) BETWEEN 1 AND 100),
    secret_hash                TEXT NOT NULL,
    scopes                     TEXT[] NOT NULL CHECK (scopes <@ ARRAY['read', 'write']::TEXT[] AND cardinality(scopes) > 0),
    -- Partner integration settings: present when the client is an ATS partner.
    integration_client_system  TEXT,
    integration_hr_url         TEXT,
    signing_secret_ciphertext  BYTEA,
    active                     BOOLEAN NOT NULL DEFAULT TRUE,
    created_at                 TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at                 TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((integration_client_system IS NULL) = (signing_secret_ciphertext IS NULL))
);
ALTER TABLE employees ADD CONSTRAINT employees_integration_client_fk
    FOREIGN KEY (integration_client_id) REFERENCES oauth_clients (id);
CREATE UNIQUE INDEX employees_integration_candidate_key
    ON employees (integration_client_id, integration_candidate_id)
    WHERE integration_candidate_id IS NOT NULL;

-- A sign-in: every access and refresh token descends from one grant, so
-- reuse of a refresh token can revoke the whole family.
CREATE TABLE oauth_grants (
    id          UUID PRIMARY KEY,
    client_id   BIGINT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    scopes      TEXT[] NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at  TIMESTAMPTZ,
    revoked_reason TEXT
);
CREATE INDEX oauth_grants_user_idx ON oauth_grants (user_id);

CREATE TABLE access_tokens (
    token_hash  BYTEA PRIMARY KEY,
    grant_id    UUID NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    scopes      TEXT[] NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX access_tokens_grant_idx ON access_tokens (grant_id);
CREATE INDEX access_tokens_expires_idx ON access_tokens (expires_at);

CREATE TABLE refresh_tokens (
    token_hash  BYTEA PRIMARY KEY,
    grant_id    UUID NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    scopes      TEXT[] NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    used_at     TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX refresh_tokens_grant_idx ON refresh_tokens (grant_id);

-- Failed sign-ins, for throttling per username (shared by every API instance).
CREATE TABLE sign_in_failures (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    username    TEXT NOT NULL,
    failed_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX sign_in_failures_username_idx ON sign_in_failures (lower(username), failed_at);

CREATE TABLE i9s (
    id                       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    employee_id              BIGINT NOT NULL REFERENCES employees (id) ON DELETE RESTRICT,
    employment_period_id     BIGINT REFERENCES employment_periods (id),
    status                   TEXT NOT NULL CHECK (status IN (
                                 'Section 1 Incomplete', 'Signed Sec 1', 'Signed Sec 2',
                                 'Completed', 'Approved', 'Parked')),
    remote                   BOOLEAN NOT NULL DEFAULT FALSE,
    onboarding_type          TEXT CHECK (onboarding_type IN ('on-site', 'remote')),
    i9_notes                 TEXT,
    form_type                INTEGER NOT NULL DEFAULT 1,
    form_version             TEXT NOT NULL,
    attestation              TEXT CHECK (attestation IN (
                                 'citizen', 'noncitizen national', 'permanent resident',
                                 'alien authorized to work')),
    date_created             TIMESTAMPTZ NOT NULL DEFAULT now(),
    date_completed           TIMESTAMPTZ,
    date_due                 DATE,
    date_approved            TIMESTAMPTZ,
    start_date               DATE,
    i9_expiration            DATE,
    retention_date           DATE,
    signed_date_employee     DATE,
    signed_date_employer     DATE,
    signed_date_translator   DATE,
    first_name               TEXT NOT NULL,
    last_name                TEXT NOT NULL,
    middle_initial           TEXT CHECK (length(middle_initial) <= 1),
    other_name               TEXT,
    date_of_birth            DATE,
    ssn_ciphertext           BYTEA,
    ssn_last4                TEXT CHECK (ssn_last4 ~ '^[0-9]{4}$'),
    email_address            TEXT,
    phone_number             TEXT,
    address_street           TEXT,
    address_apartment        TEXT,
    address_city             TEXT,
    address_state            TEXT,
    address_zip              TEXT,
    work_authorization       TEXT,
    work_authorization_expiration DATE,
    alien_number             TEXT,
    admission_number         TEXT,
    foreign_passport_number  TEXT,
    foreign_passport_country TEXT,
    employer_first_name      TEXT,
    employer_last_name       TEXT,
    employer_title           TEXT,
    employer_business        TEXT,
    employer_address         TEXT,
    employer_city            TEXT,
    employer_state           TEXT,
    employer_zip             TEXT,
    translator_first_name    TEXT,
    translator_last_name     TEXT,
    translator_address       TEXT,
    translator_city          TEXT,
    translator_state         TEXT,
    translator_zip           TEXT,
    list_a1_doc_title        TEXT,
    list_a1_doc_issuer       TEXT,
    list_a1_doc_number       TEXT,
    list_a1_doc_expiration   DATE,
    list_a2_doc_title        TEXT,
    list_a2_doc_issuer       TEXT,
    list_a2_doc_number       TEXT,
    list_a2_doc_expiration   DATE,
    list_a3_doc_title        TEXT,
    list_a3_doc_issuer       TEXT,
    list_a3_doc_number       TEXT,
    list_a3_doc_expiration   DATE,
    list_b_doc_title         TEXT,
    list_b_doc_issuer        TEXT,
    list_b_doc_number        TEXT,
    list_b_doc_expiration    DATE,
    list_c_doc_title         TEXT,
    list_c_doc_issuer        TEXT,
    list_c_doc_number        TEXT,
    list_c_doc_expiration    DATE,
    created_at               TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at               TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- At most one open I-9 per employee.
CREATE UNIQUE INDEX i9s_one_open_per_employee ON i9s (employee_id)
    WHERE status IN ('Section 1 Incomplete', 'Signed Sec 1', 'Signed Sec 2');
CREATE INDEX i9s_employee_idx ON i9s (employee_id, id DESC);

-- An I-9 the API has requested and a worker creates. Its Section 1 link token
-- is issued (hashed) in the write's transaction so the response can carry it.
CREATE TABLE i9_requests (
    id                   UUID PRIMARY KEY,
    employee_id          BIGINT NOT NULL REFERENCES employees (id) ON DELETE RESTRICT,
    remote               BOOLEAN NOT NULL,
    onboarding_type      TEXT CHECK (onboarding_type IN ('on-site', 'remote')),
    section1_token_hash  BYTEA NOT NULL UNIQUE,
    section1_expires_at  TIMESTAMPTZ NOT NULL,
    section1_used_at     TIMESTAMPTZ,
    i9_id                BIGINT UNIQUE REFERENCES i9s (id),
    created_at           TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- At most one I-9 being created per employee.
CREATE UNIQUE INDEX i9_requests_one_pending ON i9_requests (employee_id) WHERE i9_id IS NULL;

-- Transactional outbox: jobs committed with the write that caused them, relayed to RabbitMQ.
CREATE TABLE job_outbox (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id        UUID NOT NULL UNIQUE,
    kind          TEXT NOT NULL,
    payload       JSONB NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    published_at  TIMESTAMPTZ,
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT
);
CREATE INDEX job_outbox_unpublished_idx ON job_outbox (id) WHERE published_at IS NULL;

-- Jobs a worker has carried out, so a redelivered job takes effect once.
CREATE TABLE processed_jobs (
    job_id        UUID PRIMARY KEY,
    kind          TEXT NOT NULL,
    processed_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Status events for partners and every attempt to deliver them.
CREATE TABLE partner_events (
    id              UUID PRIMARY KEY,
    employee_id     BIGINT NOT NULL REFERENCES employees (id),
    i9_id           BIGINT REFERENCES i9s (id),
    sequence        BIGINT NOT NULL,
    event_type      TEXT NOT NULL,
    payload         JSONB NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    delivered_at    TIMESTAMPTZ,
    dead_at         TIMESTAMPTZ,
    UNIQUE (employee_id, sequence)
);
CREATE TABLE callback_attempts (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     UUID NOT NULL REFERENCES partner_events (id),
    attempted_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    http_status  INTEGER,
    duration_ms  INTEGER NOT NULL,
    error        TEXT
);
CREATE INDEX callback_attempts_event_idx ON callback_attempts (event_id, id);

-- Who did what, when: every write and every read of a full SSN.
CREATE TABLE audit_log (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    user_id       BIGINT REFERENCES users (id),
    client_id     BIGINT REFERENCES oauth_clients (id),
    action        TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id   TEXT,
    request_id    TEXT,
    detail        JSONB NOT NULL DEFAULT '{}'::JSONB
);
CREATE INDEX audit_log_resource_idx ON audit_log (resource_type, resource_id);
CREATE INDEX audit_log_occurred_idx ON audit_log (occurred_at);

-- Idempotency-Key: the first response to a key is replayed for 24 hours.
CREATE TABLE idempotency_keys (
    user_id          BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    idempotency_key  TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    request_path     TEXT NOT NULL,
    request_hash     BYTEA NOT NULL,
    response_status  SMALLINT,
    response_headers JSONB,
    response_body    BYTEA,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, idempotency_key)
);
