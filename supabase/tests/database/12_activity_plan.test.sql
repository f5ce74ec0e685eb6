-- A page of the activity after a cursor, as `authenticated` under row-level security: the cursor
-- event's time bounds the scan of the creator's events on secret_events_user_id_idx, so a page deep
-- in the trail reads a page's worth of rows, not every newer event. The query explained is the one
-- public.list_secret_events runs after a cursor, read from its source.
begin;
create extension if not exists pgtap with schema extensions;
select plan(4);

insert into public.wallet_users (id, wallet_address) values
  ('f1000000-0000-4000-8000-000000000001', '0xf1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1');
insert into public.auth_sessions (id, user_id, expires_at) values
  ('f1000000-0000-4000-8000-0000000000f1', 'f1000000-0000-4000-8000-000000000001',
    now() + interval '1 hour');
-- 40,000 reveals of the creator a second apart, and as many of 1,000 others.
insert into public.secret_events (user_id, secret_types, action, occurred_at)
  select 'f1000000-0000-4000-8000-000000000001', array['provider_b_key'], 'reveal',
         now() - make_interval(secs => g)
    from generate_series(1, 40000) g;
insert into public.secret_events (user_id, secret_types, action, occurred_at)
  select ('f2000000-0000-4000-8000-' || lpad(to_hex(g % 1000), 12, '0'))::uuid,
         array['provider_b_key'], 'reveal', now() - make_interval(secs => g)
    from generate_series(1, 40000) g;
analyze public.secret_events, public.auth_sessions, public.wallet_users;

-- EXPLAIN ANALYZE of the page query, with the values of a cursor 30,000 events deep in place of
-- its variables, run in the creator's role and claims as the function runs it.
create function pg_temp.page_plan(creator uuid, claims text) returns text
  language plpgsql as $$
  declare
    source text := (select p.prosrc from pg_proc p
      where p.oid = 'public.list_secret_events(text, uuid, uuid, bigint, integer)'::regprocedure);
    query text := substring(source from 'return query\s+(select true[^;]*cursor_at[^;]*);');
    cursor_event record;
    caller text := current_user;
    plan text;
  begin
    if query is null then
      return null;
    end if;
    select e.id, e.occurred_at into cursor_event from public.secret_events e
     where e.user_id = creator order by e.occurred_at desc offset 30000 limit 1;
    query := replace(query, 'list_secret_events.user_id', quote_literal(creator) || '::uuid');
    query := replace(query, 'list_secret_events.page_size', '50');
    query := replace(query, 'cursor_at', quote_literal(cursor_event.occurred_at) || '::timestamptz');
    query := replace(query, 'cursor_id', cursor_event.id::text);
    perform set_config('request.jwt.claims', claims, true);
    perform set_config('role', 'authenticated', true);
    execute 'explain (analyze, format json, verbose) ' || query into plan;
    perform set_config('role', caller, true);
    return plan;
  end
  $$;
create temporary table page_plan as
  select pg_temp.page_plan('f1000000-0000-4000-8000-000000000001',
    '{"sub":"f1000000-0000-4000-8000-000000000001","role":"authenticated","session_id":"f1000000-0000-4000-8000-0000000000f1"}'
  )::jsonb as plan;

select isnt((select plan from page_plan), null,
  'the page query after a cursor is found in public.list_secret_events and explained');
select ok((select plan::text like '%session_is_live%' from page_plan),
  'the plan is the creator''s, under the policies');
select ok((select plan::text ~ '"Index Cond": "\(\(e\.user_id = [^"]*AND \(e\.occurred_at <= '
  from page_plan), 'the cursor''s time bounds the index scan of the creator''s events');
select cmp_ok((select max((n ->> 'Actual Rows')::integer
      + coalesce((n ->> 'Rows Removed by Filter')::integer, 0)
      + coalesce((n ->> 'Rows Removed by Join Filter')::integer, 0))
    from page_plan, jsonb_path_query(plan, 'strict $.**') n
   where jsonb_typeof(n) = 'object' and n ? 'Actual Rows'), '<=', 100,
  'no step of the page reads or filters more than two pages of events');

select * from finish();
rollback;
