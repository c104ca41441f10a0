-- FOCUS ChargeFrequency as the file gives it ('One-Time', 'Recurring', 'Usage-Based'; NULL when the
-- column is absent or null), what tells a daily usage charge from a monthly fee or a one-time purchase.
-- And the FOCUS 1.3 columns kept: the providers that replace ProviderName/PublisherName, the contract
-- commitments a charge applies to, and split cost allocation (JSON columns as jsonb, checked on upload).
ALTER TABLE cost_records
  ADD COLUMN charge_frequency text,
  ADD COLUMN service_provider_name text,
  ADD COLUMN host_provider_name text,
  ADD COLUMN contract_applied jsonb,
  ADD COLUMN allocated_method_id text,
  ADD COLUMN allocated_method_details jsonb,
  ADD COLUMN allocated_resource_id text,
  ADD COLUMN allocated_resource_name text,
  ADD COLUMN allocated_tags jsonb;
