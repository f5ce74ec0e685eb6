-- The reveal's expiry (20261129110100_reveal_retention.sql) looks at the oldest event first: while
-- it is still kept, as it is for all but a few reveals a day, nothing is deleted, and one index
-- step says so. Before, every reveal looked up the 16 lowest ids one by one to find none expired.
-- What is deleted once the oldest has expired is unchanged.
create or replace function public.expire_secret_events(retention_days integer) returns void
  language plpgsql security definer set search_path = pg_catalog, pg_temp
  as $$
  declare
    kept_since timestamptz := now() - make_interval(days => expire_secret_events.retention_days);
  begin
    if not exists (
      select from (select h.occurred_at from public.secret_events h order by h.id limit 1) oldest
       where oldest.occurred_at < kept_since
    ) then
      return;
    end if;
    delete from public.secret_events e
     where e.id in (
       select o.id from public.secret_events o
        where o.id = any(array(select h.id from public.secret_events h order by h.id limit 16))
          and o.occurred_at < kept_since
        for update skip locked);
  end
  $$;

revoke all on function public.expire_secret_events(integer) from public, anon, authenticated;
