/* placeholder until the first source lands */ typedef int rp__placeholder_rabbitmq;
