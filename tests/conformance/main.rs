//! The backend conformance suite: the same cases on SQLite, PostgreSQL and MariaDB/MySQL,
//! for every backend feature enabled. Server URLs: `OUTBOX_TEST_POSTGRES_URL`
//! (default `postgres://postgres@127.0.0.1:5432/test`) and `OUTBOX_TEST_MYSQL_URL`
//! (default `mysql://root@127.0.0.1:3306/test`); each test creates and drops its own
//! database there. An unreachable server fails the tests loudly.

#[path = "../common/captured.rs"]
mod captured;
mod cases;
mod cron;
mod failed_enqueue;
mod fan_out;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod faults;
mod groups;
mod harness;
mod inbox;
#[cfg(feature = "postgres")]
mod isolation;
mod layers;
mod many_types;
mod ordering;
mod outage;
mod processes;
mod providers;
#[path = "../common/proxy.rs"]
mod proxy;
mod publish;
mod shaping;
#[path = "../common/smtp_sink.rs"]
mod smtp_sink;
mod testing;
mod unknown_users;
mod webhooks;

/// One test per case for a backend.
macro_rules! conformance {
    ($backend:ident, $harness:ty, $feature:literal) => {
        #[cfg(feature = $feature)]
        mod $backend {
            use super::{
                cases, cron, failed_enqueue, fan_out, groups, harness, inbox, many_types, ordering, outage,
                processes, providers, shaping, testing, unknown_users, webhooks,
            };
            type H = $harness;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn atomic_enqueue() {
                cases::atomic_enqueue::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn idempotent_in_one_transaction() {
                cases::idempotent_in_one_transaction::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn idempotent_across_concurrent_transactions() {
                cases::idempotent_across_concurrent_transactions::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn delayed_message_waits() {
                cases::delayed_message_waits::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn durable_retry_schedule() {
                cases::durable_retry_schedule::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn retry_now_starts_a_retrying_message_within_a_second() {
                cases::retry_now_starts_a_retrying_message_within_a_second::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn dead_letters_and_requeue() {
                cases::dead_letters_and_requeue::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn failed_attempts_are_logged_with_the_dead_letter() {
                cases::failed_attempts_are_logged_with_the_dead_letter::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn orphans_are_dropped() {
                cases::orphans_are_dropped::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn fifty_types_deliver_once_and_a_paused_type_waits() {
                many_types::fifty_types_deliver_once_and_a_paused_type_waits::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_smtp_outage_opens_one_breaker_across_two_processes() {
                outage::an_smtp_outage_opens_one_breaker_across_two_processes::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_breaker_opened_elsewhere_holds_this_process() {
                outage::a_breaker_opened_elsewhere_holds_this_process::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn assert_and_refute_what_a_transaction_enqueued() {
                testing::assert_and_refute_what_a_transaction_enqueued::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn pause_and_resume() {
                cases::pause_and_resume::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn shared_rate_bucket() {
                cases::shared_rate_bucket::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn status_counts() {
                cases::status_counts::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn fan_out_ten_thousand() {
                cases::fan_out_ten_thousand::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn fan_out_from_an_iterator() {
                fan_out::fan_out_from_an_iterator::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn fan_out_from_a_query() {
                fan_out::fan_out_from_a_query::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn fresh_processes_select_distinct_ids() {
                fan_out::fresh_processes_select_distinct_ids::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn fan_out_from_a_stream() {
                fan_out::fan_out_from_a_stream::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_stale_workers_settlement_is_refused() {
                cases::a_stale_workers_settlement_is_refused::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_manual_clock_expires_a_lease() {
                cases::a_manual_clock_expires_a_lease::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_short_retention_frees_its_key_soon() {
                cases::a_short_retention_frees_its_key_soon::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_oversize_statement_names_the_packet_limit() {
                cases::an_oversize_statement_names_the_packet_limit::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn retention_off_and_on() {
                cases::retention_off_and_on::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn prefetch_stays_within_the_lease() {
                cases::prefetch_stays_within_the_lease::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn concurrent_requeues_of_one_dead_letter() {
                cases::concurrent_requeues_of_one_dead_letter::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_error_text_with_a_nul_byte_is_recorded() {
                cases::an_error_text_with_a_nul_byte_is_recorded::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_unmigrated_database_names_the_fix() {
                cases::an_unmigrated_database_names_the_fix::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn payload_limit_and_large_payloads() {
                cases::payload_limit_and_large_payloads::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_key_held_by_an_open_transaction_times_out_clearly() {
                cases::a_key_held_by_an_open_transaction_times_out_clearly::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_deadlocked_enqueue_commits_nothing_after_it() {
                failed_enqueue::a_deadlocked_enqueue_commits_nothing_after_it::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_timed_out_enqueue_commits_nothing_after_it() {
                failed_enqueue::a_timed_out_enqueue_commits_nothing_after_it::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn retry_transaction_runs_a_timed_out_transaction_again() {
                failed_enqueue::retry_transaction_runs_a_timed_out_transaction_again::<H>().await
            }
            #[tokio::test]
            async fn a_fast_backlog_grows_the_default_batch() {
                cases::a_fast_backlog_grows_the_default_batch::<H>().await
            }
            #[tokio::test]
            async fn a_slow_statement_of_an_outbox_pool_is_no_warning() {
                cases::a_slow_statement_of_an_outbox_pool_is_no_warning::<H>().await
            }
            #[tokio::test]
            async fn a_fenced_off_workers_results_count_nothing() {
                cases::a_fenced_off_workers_results_count_nothing::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn three_processes_deliver_each_exactly_once() {
                processes::three_processes_deliver_each_exactly_once::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_limited_drain_sends_what_the_limit_allows() {
                cron::a_limited_drain_sends_what_the_limit_allows::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn oldest_first_under_a_limit() {
                cron::oldest_first_under_a_limit::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_undeliverable_message_spends_no_token() {
                cron::an_undeliverable_message_spends_no_token::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_invalid_email_spends_no_token() {
                cron::an_invalid_email_spends_no_token::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn two_processes_steer_a_group() {
                groups::two_processes_steer_a_group::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn cancel_stops_claimed_mails_in_two_processes() {
                groups::cancel_stops_claimed_mails_in_two_processes::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn live_listing_pages_without_repeats_or_gaps() {
                groups::live_listing_pages_without_repeats_or_gaps::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn killed_workers_messages_are_delivered_by_another() {
                processes::killed_workers_messages_are_delivered_by_another::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_slowed_site_gets_the_rate_it_is_slowed_to() {
                shaping::a_slowed_site_gets_the_rate_it_is_slowed_to::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_ses_throttle_storm_loses_nothing_and_slows_the_providers_site() {
                providers::an_ses_throttle_storm_loses_nothing_and_slows_the_providers_site::<H>()
                    .await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn webhooks_are_verified_by_the_reference_libraries_during_a_rotation() {
                webhooks::webhooks_are_verified_by_the_reference_libraries_during_a_rotation::<H>()
                    .await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn webhook_answers_are_classified() {
                webhooks::webhook_answers_are_classified::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_endpoint_that_only_fails_is_disabled_after_the_allowed_time() {
                webhooks::an_endpoint_that_only_fails_is_disabled_after_the_allowed_time::<H>()
                    .await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_ordered_endpoint_gets_its_events_in_order() {
                webhooks::an_ordered_endpoint_gets_its_events_in_order::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_endpoint_down_for_30_seconds_costs_no_attempts() {
                webhooks::an_endpoint_down_for_30_seconds_costs_no_attempts::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn two_processes_keep_each_keys_order_and_a_poisoned_key_holds_only_itself() {
                ordering::two_processes_keep_each_keys_order_and_a_poisoned_key_holds_only_itself::<H>()
                    .await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_processed_id_commits_with_the_handlers_rows() {
                inbox::a_processed_id_commits_with_the_handlers_rows::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn two_transactions_racing_on_one_id_record_it_once() {
                inbox::two_transactions_racing_on_one_id_record_it_once::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn old_processed_ids_are_counted_and_pruned() {
                inbox::old_processed_ids_are_counted_and_pruned::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_type_not_declared_ordered_refuses_a_key() {
                ordering::a_type_not_declared_ordered_refuses_a_key::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stored_shaping_rules_are_capped() {
                shaping::stored_rules_are_capped::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_unknown_user_of_a_list_email_is_suppressed() {
                unknown_users::an_unknown_user_of_a_list_email_is_suppressed::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_list_email_without_unsubscribe_waits_for_the_fix() {
                unknown_users::a_list_email_without_unsubscribe_waits_for_the_fix::<H>().await
            }
            /// Events through the real brokers (`-- publish` runs these).
            mod publish {
                publish_cases!(nats, crate::publish::Nats);
                publish_cases!(rabbitmq, crate::publish::Rabbit);
            }
            #[allow(unused_imports)]
            use harness::Harness as _;
        }
    };
}

/// The publish cases of one database (`super::super::H`) through broker `$broker`.
macro_rules! publish_cases {
    ($name:ident, $broker:ty) => {
        mod $name {
            use super::super::H;
            type B = $broker;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn every_event_reaches_the_inbox_once() {
                crate::publish::every_event_reaches_the_inbox_once::<H, B>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn the_relay_killed_ten_times_loses_nothing() {
                crate::publish::the_relay_killed_ten_times_loses_nothing::<H, B>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_private_broker_restarted_mid_run_loses_nothing() {
                crate::publish::a_private_broker_restarted_mid_run_loses_nothing::<H, B>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn two_relays_keep_each_keys_order() {
                crate::publish::two_relays_keep_each_keys_order::<H, B>().await
            }
        }
    };
}

conformance!(sqlite, harness::SqliteHarness, "sqlite");
conformance!(postgres, harness::PostgresHarness, "postgres");
conformance!(mysql, harness::MySqlHarness, "mysql");

/// Hosts whose clocks disagree (PostgreSQL and MariaDB: a database with a clock of its own;
/// SQLite lives on one host).
mod clock_skew {
    #[cfg(feature = "postgres")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_skewed_clocks_agree() {
        super::processes::skewed_clocks_agree::<super::harness::PostgresHarness>().await
    }
    #[cfg(feature = "mysql")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mysql_skewed_clocks_agree() {
        super::processes::skewed_clocks_agree::<super::harness::MySqlHarness>().await
    }
}

/// A worker process started by the process-level cases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "started by the process-level conformance cases"]
async fn child_worker() {
    let (Ok(role), Ok(backend), Ok(url)) = (
        std::env::var("OUTBOX_CONF_ROLE"),
        std::env::var("OUTBOX_CONF_BACKEND"),
        std::env::var("OUTBOX_CONF_URL"),
    ) else {
        return;
    };
    if role.starts_with("publish-") {
        // A relay process of the publish cases.
        return match backend.as_str() {
            #[cfg(feature = "sqlite")]
            "sqlite" => publish::child::<harness::SqliteHarness>(&role, &url).await,
            #[cfg(feature = "postgres")]
            "postgres" => publish::child::<harness::PostgresHarness>(&role, &url).await,
            #[cfg(feature = "mysql")]
            "mysql" => publish::child::<harness::MySqlHarness>(&role, &url).await,
            other => panic!("unknown backend {other}"),
        };
    }
    match backend.as_str() {
        #[cfg(feature = "sqlite")]
        "sqlite" => processes::child::<harness::SqliteHarness>(&role, &url).await,
        #[cfg(feature = "postgres")]
        "postgres" => processes::child::<harness::PostgresHarness>(&role, &url).await,
        #[cfg(feature = "mysql")]
        "mysql" => processes::child::<harness::MySqlHarness>(&role, &url).await,
        other => panic!("unknown backend {other}"),
    }
}

/// The cases of `layers` for one connection layer on one database.
macro_rules! layer_tests {
    ($name:ident, $harness:ty, $layer:ty, $($feature:literal),+) => {
        #[cfg(all($(feature = $feature),+))]
        mod $name {
            use super::{harness, layers};
            type H = $harness;
            type L = $layer;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn enqueue_commit_rollback_and_deliver() {
                layers::enqueue_commit_rollback_and_deliver::<H, L>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_unmigrated_database_says_migrate() {
                layers::an_unmigrated_database_says_migrate::<H, L>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_timed_out_enqueue_commits_nothing() {
                layers::a_timed_out_enqueue_commits_nothing::<H, L>().await
            }
        }
    };
}

layer_tests!(
    sqlx08_postgres,
    harness::PostgresHarness,
    layers::sqlx08_layer::Sqlx08<sqlx08::Postgres>,
    "sqlx08",
    "postgres"
);
layer_tests!(
    sqlx08_mysql,
    harness::MySqlHarness,
    layers::sqlx08_layer::Sqlx08<sqlx08::MySql>,
    "sqlx08",
    "mysql"
);
layer_tests!(
    sea_orm_sqlite,
    harness::SqliteHarness,
    layers::sea_orm_layer::SeaOrm,
    "sea-orm",
    "sqlite"
);
layer_tests!(
    sea_orm_postgres,
    harness::PostgresHarness,
    layers::sea_orm_layer::SeaOrm,
    "sea-orm",
    "postgres"
);
layer_tests!(
    sea_orm_mysql,
    harness::MySqlHarness,
    layers::sea_orm_layer::SeaOrm,
    "sea-orm",
    "mysql"
);
layer_tests!(
    diesel_async_sqlite,
    harness::SqliteHarness,
    layers::diesel_async_layer::DieselAsync<
        diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::SqliteConnection>,
    >,
    "diesel-async",
    "sqlite"
);
layer_tests!(
    diesel_async_postgres,
    harness::PostgresHarness,
    layers::diesel_async_layer::DieselAsync<diesel_async::AsyncPgConnection>,
    "diesel-async",
    "postgres"
);
layer_tests!(
    diesel_async_mysql,
    harness::MySqlHarness,
    layers::diesel_async_layer::DieselAsync<diesel_async::AsyncMysqlConnection>,
    "diesel-async",
    "mysql"
);
layer_tests!(
    diesel_sqlite,
    harness::SqliteHarness,
    layers::diesel_layer::Diesel<diesel::SqliteConnection>,
    "diesel-sqlite"
);
layer_tests!(
    diesel_postgres,
    harness::PostgresHarness,
    layers::diesel_layer::Diesel<diesel::PgConnection>,
    "diesel-postgres"
);
layer_tests!(
    diesel_mysql,
    harness::MySqlHarness,
    layers::diesel_layer::Diesel<diesel::MysqlConnection>,
    "diesel-mysql"
);

/// Sync diesel's `conn.transaction(|conn| …)` with `enqueue_blocking`, per database.
mod diesel_closure {
    #[allow(unused_imports)]
    use super::{harness, layers};

    #[cfg(feature = "diesel-sqlite")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        layers::diesel_transaction_closure_enqueues_blocking::<
            harness::SqliteHarness,
            diesel::SqliteConnection,
        >(|url| url.strip_prefix("sqlite://").unwrap_or(url))
        .await
    }
    #[cfg(feature = "diesel-postgres")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        layers::diesel_transaction_closure_enqueues_blocking::<
            harness::PostgresHarness,
            diesel::PgConnection,
        >(|url| url)
        .await
    }
    #[cfg(feature = "diesel-mysql")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mysql() {
        layers::diesel_transaction_closure_enqueues_blocking::<
            harness::MySqlHarness,
            diesel::MysqlConnection,
        >(|url| url)
        .await
    }
}

/// The database out of reach (a proxy between worker and server), per networked database.
/// (SQLite has no network to lose.)
macro_rules! fault_tests {
    ($backend:ident, $harness:ty, $feature:literal) => {
        #[cfg(feature = $feature)]
        mod $backend {
            use super::{faults, harness};
            type H = $harness;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_worker_cut_off_from_its_database_starts_nothing_whose_lease_ran_out() {
                faults::a_worker_cut_off_from_its_database_starts_nothing_whose_lease_ran_out::<H>()
                    .await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_settlement_whose_commit_reply_was_lost_counts_as_delivered() {
                faults::a_settlement_whose_commit_reply_was_lost_counts_as_delivered::<H>().await
            }
            // On the test's thread: its log is read back.
            #[tokio::test]
            async fn a_partitioned_database_is_one_warn_and_its_return_one_info() {
                faults::an_unreachable_database_is_one_warn_and_its_return_one_info::<H>(false)
                    .await
            }
            #[tokio::test]
            async fn a_database_that_resets_connections_is_one_warn_and_its_return_one_info() {
                faults::an_unreachable_database_is_one_warn_and_its_return_one_info::<H>(true).await
            }
        }
    };
}
mod faults_on {
    #[allow(unused_imports)]
    use super::{faults, harness};
    fault_tests!(postgres, harness::PostgresHarness, "postgres");
    fault_tests!(mysql, harness::MySqlHarness, "mysql");
}
