DROP TABLE scale_set_samples;
DROP TABLE scale_set_health;
