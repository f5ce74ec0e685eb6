-- Wrong reveal tokens are counted per client address and audited.
--
-- A reveal with a missing or wrong server token was refused before the database was asked: about a
-- thousand guesses a second from one client met no limit and left no trace. Now each such refusal
-- is one call of public.refuse_reveal: it counts the try against the client address's budget and,
-- when the request carried a live session, writes a 'reveal_refused' event for that session's
-- creator, so the creator's trail shows the attempt (within a budget per client and per creator).
-- A right token never reaches this function.
--
-- A refused reveal has read nothing (the request's body is not even read), so its event names no
-- type: the one kind of event whose secret_types may be empty. The constraints are replaced in
-- place, each checked against the existing trail under the table's lock (a scan, no rewrite).

alter table public.secret_events
  drop constraint secret_events_action_check,
  add constraint secret_events_action_check
    check (action in ('put', 'delete', 'reveal', 'reveal_failed', 'reveal_refused', 'rotate')),
  drop constraint secret_events_secret_types_check,
  add constraint secret_events_secret_types_check
    check (case when cardinality(secret_types) = 0 then action = 'reveal_refused'
      else array_ndims(secret_types) = 1 and array_position(secret_types, null) is null end);

-- Counts one refused reveal against `client_bucket` (the client address's budget) and, while the
-- window's count is at most one over `refusal_limit` and `session_id` names a live session of
-- `user_id`, counts it against that creator's budget too and, while that count is also at most
-- one over the limit, records a 'reveal_refused' event for the creator. Refusals past the first
-- one over either limit are counted but not recorded, so neither one client nor many (every /64
-- of an IPv6 block is a client) can grow a creator's trail without bound. The caller passes null
-- for the session when the request carried no valid one. Returns the client's count in the window,
-- the seconds left in it, and whether an event was written.
create function public.refuse_reveal(
  client_bucket text,
  refusal_limit integer,
  window_seconds integer,
  session_id uuid,
  user_id uuid
)
  returns table (hits integer, retry_after integer, recorded boolean)
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  #variable_conflict use_column
  declare
    attempt record;
    creator_hits integer;
  begin
    select * into attempt
      from public.hit_rate_limit(refuse_reveal.client_bucket, refuse_reveal.window_seconds);
    if refuse_reveal.session_id is not null and attempt.hits <= refuse_reveal.refusal_limit + 1
      and public.session_is_live_for(refuse_reveal.session_id, refuse_reveal.user_id) then
      select limited.hits into creator_hits from public.hit_rate_limit(
        'vault:reveal:refused:user:' || refuse_reveal.user_id, refuse_reveal.window_seconds
      ) limited;
      if creator_hits <= refuse_reveal.refusal_limit + 1 then
        insert into public.secret_events (user_id, secret_types, action)
          values (refuse_reveal.user_id, '{}', 'reveal_refused');
        return query select attempt.hits, greatest(1, attempt.retry_after), true;
        return;
      end if;
    end if;
    return query select attempt.hits, greatest(1, attempt.retry_after), false;
  end
  $$;

-- The service's alone: Supabase grants new functions to the API roles by default.
revoke all on function public.refuse_reveal(text, integer, integer, uuid, uuid)
  from public, anon, authenticated;
grant execute on function public.refuse_reveal(text, integer, integer, uuid, uuid) to service_role;
